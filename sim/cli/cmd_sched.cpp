#include <fstream>
#include <iostream>

#include "policies/registry.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/base/error.h"
#include "sim/engine/sched_runner.h"

namespace prefixsim::cli {

int cmd_sched(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("script", po::value<std::string>(), "scheduler step script (JSONL), or - for standard input")
      ("policy", po::value<std::string>()->default_value("lru"), "eviction policy (name[:key=value,...])")
      ("check", "verify the block pool's invariants after every step; stop at the first violation");
  po::positional_options_description pos;
  pos.add("script", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, "prefixsim sched STEPS.jsonl|- [--check] [--policy P]",
                  "Runs a scheduler step script through vLLM v1's synchronous scheduler (FCFS, prefix\n"
                  "caching, chunked prefill, preemption by recompute) over the KV cache manager, in steps\n"
                  "instead of time, and writes one compact JSON line per step to standard output:\n"
                  "  {\"step\",\"scheduled\":[[req,n]..],\"new\":[[req,cached]..],\"preempted\",\"finished\",\"num_free\"}\n"
                  "then a summary line with vLLM's prefix-cache stats (every lookup, refused and\n"
                  "preempted ones counted apart). Each scheduled request whose chunk completes its\n"
                  "sequence gets one token (sum(prompt) + k) % 50000 + 1, as in the goldens.\n"
                  "Line 1: {\"op\":\"config\",\"num_blocks\",\"block_size\",\"max_num_seqs\",\n"
                  "  \"max_num_batched_tokens\"[,\"enable_chunked_prefill\",\"long_prefill_token_threshold\",\n"
                  "  \"max_model_len\",\"enable_prefix_caching\",\"scheduler_reserve_full_isl\"]}\n"
                  "then one line per step: {\"op\":\"step\",\"arrive\":[{\"req\",\"tokens\",\"max_tokens\"},...]}.\n"
                  "Format and semantics: test/data/golden/vllm-v1-scheduler/README.md.\n"
                  "Bad input: FILE:LINE: message on stderr, exit 2, nothing on stdout."))
    return 0;
  if (!vm.count("script"))
    throw InputError("sched: missing the script argument (usage: prefixsim sched STEPS.jsonl|-)");
  const std::string path = vm["script"].as<std::string>();
  const std::string spec = vm["policy"].as<std::string>();
  make_policy(spec);  // validate the spec before reading anything
  SchedOptions o;
  o.check_invariants = vm.count("check") > 0;
  o.make_policy = [spec] { return make_policy(spec); };
  if (path == "-") {
    run_sched(std::cin, "<stdin>", std::cout, o);
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open");
    run_sched(in, path, std::cout, o);
  }
  return 0;
}

}  // namespace prefixsim::cli
