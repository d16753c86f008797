#include "sim/cli/options.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include "sim/base/error.h"
#include "sim/base/input_limits.h"

namespace prefixsim::cli {

bool parse_args(const std::vector<std::string>& args, const po::options_description& opts,
                const po::positional_options_description& pos, po::variables_map& vm, const std::string& usage,
                const std::string& description) {
  po::options_description all = opts;
  all.add_options()("help,h", "show this help and exit")
      ("max-line-bytes", po::value<uint64_t>(), "refuse an input line longer than this (default 256 MiB)")
      ("max-input-bytes", po::value<uint64_t>(),
       "refuse an input that yields more bytes than this, after decompression (default 64 GiB)");
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << description << "\n\n" << all << "\n";
      return false;
    }
    po::notify(vm);
    InputLimits& limits = input_limits();
    if (vm.count("max-line-bytes")) limits.max_line_bytes = vm["max-line-bytes"].as<uint64_t>();
    if (vm.count("max-input-bytes")) limits.max_input_bytes = vm["max-input-bytes"].as<uint64_t>();
    if (limits.max_line_bytes < 1024 || limits.max_line_bytes > (uint64_t{1} << 40))
      throw InputError("--max-line-bytes: must be in [1024, 2^40]");
    if (limits.max_input_bytes < 1024) throw InputError("--max-input-bytes: must be at least 1024");
  } catch (const po::error& e) {
    throw InputError(std::string(e.what()) + " (usage: " + usage + ")");
  }
  return true;
}

int resolve_threads(const po::variables_map& vm) {
  const int threads = vm["threads"].as<int>();
  if (threads < 0) throw InputError("--threads must be at least 1 (0 = one per core)");
  return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace prefixsim::cli
