// The `prefixsim` subcommands. Each lives in its own cmd_*.cpp and takes the
// arguments after its name; it returns the process exit code (0 ok, 1 a check
// failed, 2 bad input or usage, 3 internal error) or throws InputError /
// InternalError, which main() turns into a one-line message and that code.
#pragma once

#include <string>
#include <vector>

namespace prefixsim::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args& args);
  // A tool for checking prefixsim against vLLM or timing it, listed apart
  // from what a user runs.
  bool for_developers = false;
};

// The one table of subcommands (main.cpp).
const std::vector<Command>& commands();

int cmd_ops(const Args& args);
int cmd_compare(const Args& args);
int cmd_generate(const Args& args);
int cmd_analyze(const Args& args);
int cmd_check(const Args& args);
int cmd_sched(const Args& args);
int cmd_bench(const Args& args);
int cmd_replay(const Args& args);
int cmd_catalog(const Args& args);
int cmd_gpu(const Args& args);
int cmd_sweep(const Args& args);
int cmd_plan(const Args& args);
int cmd_validate(const Args& args);
int cmd_calibrate(const Args& args);

// `gpu calibrate --from-vidur DIR` (cmd_gpu_vidur.cpp).
struct VidurCalibrateArgs {
  std::string dir;       // a Vidur checkout, its data/profiling/compute, or one mlp.csv
  std::string gpu;       // catalog GPU for the profiles (default: from Vidur's folder name)
  std::string model;     // catalog model (default: the one with the table's shape)
  std::string out_dir;   // where profiles go; empty: print the errors only
  std::string source;    // provenance: repository and commit
  std::string date;      // the profiles' date (default: now)
  int tp = 0;            // 0: every TP degree in the table
  int held_out_every = 5;
};
int calibrate_from_vidur(const VidurCalibrateArgs& a);

}  // namespace prefixsim::cli
