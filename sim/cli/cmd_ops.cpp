#include <fstream>
#include <iostream>

#include "policies/registry.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/base/error.h"
#include "sim/kv/ops_runner.h"

namespace prefixsim::cli {

int cmd_ops(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("script", po::value<std::string>(), "operation script (JSONL), or - for standard input")
      ("policy", po::value<std::string>()->default_value("lru"), "eviction policy (name[:key=value,...])")
      ("check", "verify the block pool's invariants after every op; stop at the first violation");
  po::positional_options_description pos;
  pos.add("script", 1);
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, "prefixsim ops OPS.jsonl|- [--check] [--policy P]",
                  "Runs a block-manager operation script through the KV cache manager and writes one\n"
                  "compact JSON line per op to standard output, as vLLM v1's own KVCacheManager reports\n"
                  "it, then a summary line. The format and semantics are those of\n"
                  "test/data/golden/vllm-v1/README.md: ops config, arrive, append, finish.\n"
                  "Bad input: FILE:LINE: message on stderr, exit 2, nothing on stdout."))
    return 0;
  if (!vm.count("script")) throw InputError("ops: missing the script argument (usage: prefixsim ops OPS.jsonl|-)");
  const std::string path = vm["script"].as<std::string>();
  const std::string spec = vm["policy"].as<std::string>();
  make_policy(spec);  // validate the spec before reading anything
  OpsOptions o;
  o.check_invariants = vm.count("check") > 0;
  o.make_policy = [spec] { return make_policy(spec); };
  if (path == "-") {
    run_ops(std::cin, "<stdin>", std::cout, o);
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open");
    run_ops(in, path, std::cout, o);
  }
  return 0;
}

}  // namespace prefixsim::cli
