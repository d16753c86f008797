// Shared Boost.Program_options plumbing for subcommands: parse, print help,
// and turn option errors into InputError (exit 2).
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
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

// Comma lists, as every list flag takes them (--policies, --routers,
// --replicas, pool sizes): an empty list, an empty entry or an entry given
// twice is an InputError naming `flag` (and the entry).
//
// Specs, name[:key=value,...] each: an entry with '=' but no ':' continues
// the previous spec's parameters, so "kv-aware:overlap_weight=2,temperature=0.5,
// prefix" is two routers. Twice means the same text.
std::vector<std::string> parse_spec_list(const std::string& flag, const std::string& text);
// Numbers, each > 0. Twice means the same value ("2,02").
std::vector<int64_t> parse_positive_int_list(const std::string& flag, const std::string& text);
std::vector<double> parse_positive_real_list(const std::string& flag, const std::string& text);
// Sizes in GiB where 0 means none and inf unbounded (--kv-offloading-size).
std::vector<double> parse_gib_list(const std::string& flag, const std::string& text);

}  // namespace prefixsim::cli
