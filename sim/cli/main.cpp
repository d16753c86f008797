// prefixsim: replays LLM request traces against a vLLM-v1-exact prefix cache.
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>

#include "prefixsim_config.h"
#include "sim/base/atomic_file.h"
#include "sim/base/bench.h"
#include "sim/cli/commands.h"
#include "sim/base/error.h"
#include "sim/kv/block_ops.h"

namespace prefixsim::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"replay", "replay a trace (or the built-in workload) through a simulated vLLM server; report hit rate and TTFT", cmd_replay},
      {"compare", "replay one trace under several eviction policies and pool sizes; gap to the offline optimum", cmd_compare},
      {"analyze", "measure a trace's prefix reuse: ideal hit rate, hottest prefixes, KV budget for target hit rates", cmd_analyze},
      {"generate", "generate a synthetic workload (preset or YAML) as a native JSONL trace", cmd_generate},
      {"sweep", "run every point of a grid of scenarios (any key an axis) on threads or MPI ranks; tables and charts", cmd_sweep},
      {"plan", "find the cheapest fleet (replicas x TP) of a model on a GPU that meets an SLO on a trace", cmd_plan},
      {"validate", "replay observed runs of real vLLM servers at their settings; error of TTFT, E2E, TPOT", cmd_validate},
      {"calibrate", "fit the step model to observed runs of real vLLM servers (--profile takes the result)", cmd_calibrate},
      {"catalog", "list the built-in models and GPUs with KV bytes and default pool sizes; check a profile", cmd_catalog},
      {"check", "compare a report.json with a baseline; exit 1 on a regression (the CI gate)", cmd_check},
      {"gpu", "fit a cost-model profile to step times measured by prefixsim-gpu-bench (gpu calibrate)", cmd_gpu},
      {"ops", "run a block-manager operation script; one JSON line per op (vLLM golden format)", cmd_ops, true},
      {"sched", "run a scheduler step script; one JSON line per step (vLLM v1 scheduler golden format)", cmd_sched, true},
      {"bench", "run the benchmarks and print medians (speed and memory are measured here)", cmd_bench, true},
  };
  return table;
}

namespace {

void print_help() {
  std::cout << "prefixsim " PREFIXSIM_VERSION
               " - discrete-event simulator of LLM prefix-cache behaviour\n\n"
               "Replays request traces against pluggable eviction policies over one\n"
               "vLLM-v1-exact hash-chain block manager and reports hit rate and TTFT.\n\n"
               "usage: prefixsim <command> [options]     (prefixsim <command> --help for details)\n";
  for (const bool developers : {false, true}) {
    std::cout << (developers ? "\nchecking prefixsim against vLLM, and timing it:\n" : "\ncommands:\n");
    for (const Command& c : commands()) {
      if (c.for_developers != developers) continue;
      std::cout << "  " << c.name;
      for (size_t i = std::strlen(c.name); i < 10; ++i) std::cout << ' ';
      std::cout << c.summary << "\n";
    }
  }
  std::cout << "\noptions:\n  -h, --help     show this help\n  --version      print the version\n\n"
               "exit codes: 0 ok, 1 a check or regression failed, 2 bad input or usage, 3 internal error\n";
}

// For `prefixsim bench`, which runs replays as child processes (bench.h):
// the peak RSS in kB, then the block manager's operations by kind
// (sim/kv/block_ops.h: looked up, allocated, cached, freed).
void write_peak_rss() {
  const char* path = std::getenv(kPeakRssFileEnv);
  if (!path || !*path) return;
  const BlockOpCounts& ops = block_op_counts();
  std::ofstream(path) << std::llround(peak_rss_mib() * 1024.0) << "\n"
                      << ops.looked_up << " " << ops.allocated << " " << ops.cached << " " << ops.freed << "\n";
}

// Output lost on standard output (a full disk, a closed pipe) is an error,
// not a success: exit 2 with a message. Returns false when it was lost.
bool stdout_written(const std::string& name) {
  errno = 0;
  std::cout.flush();
  const bool ok = static_cast<bool>(std::cout) && std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (ok) return true;
  const int err = errno;
  std::cerr << "prefixsim " << name << ": standard output: write failed" << (err ? std::string(": ") + std::strerror(err) : "")
            << "\n";
  return false;
}

}  // namespace
}  // namespace prefixsim::cli

int main(int argc, char** argv) {
  using namespace prefixsim;
  using namespace prefixsim::cli;
  std::ios::sync_with_stdio(false);
  // A closed pipe is a write error (EPIPE, reported as exit 2), not a
  // silent death by SIGPIPE (exit 141).
  std::signal(SIGPIPE, SIG_IGN);
  install_cleanup_on_signals();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::cout << "prefixsim " PREFIXSIM_VERSION "\n";
    return 0;
  }
  const std::string name = argv[1];
  for (const Command& c : commands()) {
    if (name != c.name) continue;
    try {
      const int rc = c.run(Args(argv + 2, argv + argc));
      if (!stdout_written(name)) return 2;
      // Exit 1 is an answer too (plan: no fleet meets; a check that failed).
      if (rc == 0 || rc == 1) write_peak_rss();
      return rc;
    } catch (const InputError& e) {
      std::cout.flush();
      std::cout.clear();
      std::cerr << "prefixsim " << name << ": " << e.what() << "\n";
      return 2;
    } catch (const InternalError& e) {
      std::cerr << "prefixsim " << name << ": internal error: " << e.what() << "\n";
      return 3;
    } catch (const std::bad_alloc&) {
      std::cerr << "prefixsim " << name << ": out of memory\n";
      return 3;
    } catch (const std::exception& e) {
      std::cerr << "prefixsim " << name << ": internal error: " << e.what() << "\n";
      return 3;
    }
  }
  std::cerr << "prefixsim: unknown command '" << name << "' (see prefixsim --help)\n";
  return 2;
}
