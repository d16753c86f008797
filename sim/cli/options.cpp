#include "sim/cli/options.h"

#include <iostream>

#include "sim/base/error.h"

namespace prefixsim::cli {

bool parse_args(const std::vector<std::string>& args, const po::options_description& opts,
                const po::positional_options_description& pos, po::variables_map& vm, const std::string& usage,
                const std::string& description) {
  po::options_description all = opts;
  all.add_options()("help,h", "show this help and exit");
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << description << "\n\n" << all << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string(e.what()) + " (usage: " + usage + ")");
  }
  return true;
}

}  // namespace prefixsim::cli
