// Shared Boost.Program_options plumbing for subcommands: parse, print help,
// and turn option errors into InputError (exit 2).
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace prefixsim::cli {

namespace po = boost::program_options;

// Parses args against `opts` (+ positional). Returns false when --help was
// asked for (help already printed to stdout with `usage` and `description`).
bool parse_args(const std::vector<std::string>& args, const po::options_description& opts,
                const po::positional_options_description& pos, po::variables_map& vm, const std::string& usage,
                const std::string& description);

// --threads N as the commands take it: N >= 1, or 0 for one per core
// (InputError for a negative N).
int resolve_threads(const po::variables_map& vm);

}  // namespace prefixsim::cli
