#include "sim/cli/options.h"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <sstream>
#include <string_view>
#include <thread>

#include "sim/base/error.h"
#include "sim/base/input_limits.h"

namespace prefixsim::cli {

namespace {
// Boost reads "-1" into an unsigned option as 2^64 - 1; every unsigned
// option of every command is refused a negative value here, in one place.
template <typename T>
bool is_unsigned_option(const po::value_semantic* s) {
  return dynamic_cast<const po::typed_value<T>*>(s) != nullptr;
}

void refuse_negative_unsigned(const po::parsed_options& parsed, const po::options_description& all) {
  for (const po::option& o : parsed.options) {
    const po::option_description* d = all.find_nothrow(o.string_key, false);
    if (!d) continue;
    const po::value_semantic* s = d->semantic().get();
    if (!is_unsigned_option<uint64_t>(s) && !is_unsigned_option<uint32_t>(s) && !is_unsigned_option<uint16_t>(s))
      continue;
    for (const std::string& v : o.value) {
      const size_t at = v.find_first_not_of(" \t");
      if (at != std::string::npos && v[at] == '-')
        throw InputError("--" + o.string_key + ": must be a non-negative integer, got '" + v + "'");
    }
  }
}
}  // namespace

bool parse_args(const std::vector<std::string>& args, const po::options_description& opts,
                const po::positional_options_description& pos, po::variables_map& vm, const std::string& usage,
                const std::string& description) {
  po::options_description all = opts;
  all.add_options()("help,h", "show this help and exit")
      ("max-line-bytes", po::value<uint64_t>(), "refuse an input line longer than this (default 256 MiB)")
      ("max-input-bytes", po::value<uint64_t>(),
       "refuse an input that yields more bytes than this, after decompression (default 64 GiB)");
  try {
    const po::parsed_options parsed = po::command_line_parser(args).options(all).positional(pos).run();
    refuse_negative_unsigned(parsed, all);
    po::store(parsed, vm);
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

namespace {

// The entries of a comma list as written, none empty (the list's own text
// in the message: "50," has an empty entry).
std::vector<std::string> split_entries(const std::string& flag, const std::string& text) {
  if (text.empty()) throw InputError(flag + ": nothing given");
  std::vector<std::string> out;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    out.emplace_back(rest.substr(0, comma));
    if (out.back().empty()) throw InputError(flag + ": empty entry in '" + text + "'");
    if (comma == std::string_view::npos) return out;
    rest = rest.substr(comma + 1);
  }
}

// `values` parsed from `entries`, one for one: the first entry whose value
// came before is refused.
template <typename T>
void refuse_twice(const std::string& flag, const std::vector<T>& values, const std::vector<std::string>& entries) {
  for (size_t i = 1; i < values.size(); ++i)
    if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
        values.begin() + static_cast<std::ptrdiff_t>(i))
      throw InputError(flag + ": '" + entries[i] + "' is given twice");
}

template <typename T>
std::vector<T> positive_list(const std::string& flag, const std::string& text) {
  const std::vector<std::string> entries = split_entries(flag, text);
  std::vector<T> out;
  for (const std::string& e : entries) {
    std::istringstream in(e);
    T x{};
    if (!(in >> x) || !in.eof() || !(x > 0)) throw InputError(flag + ": '" + e + "' is not a positive number");
    out.push_back(x);
  }
  refuse_twice(flag, out, entries);
  return out;
}

}  // namespace

std::vector<std::string> parse_spec_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> specs;
  for (const std::string& e : split_entries(flag, text)) {
    // "key=value" after a comma belongs to the spec before it.
    const bool continues = e.find('=') != std::string::npos && e.find(':') == std::string::npos;
    if (!continues) {
      specs.push_back(e);
    } else if (specs.empty()) {
      throw InputError(flag + ": '" + e + "' is a parameter with nothing before it");
    } else {
      specs.back() += "," + e;
    }
  }
  refuse_twice(flag, specs, specs);
  return specs;
}

std::vector<int64_t> parse_positive_int_list(const std::string& flag, const std::string& text) {
  return positive_list<int64_t>(flag, text);
}

std::vector<double> parse_positive_real_list(const std::string& flag, const std::string& text) {
  return positive_list<double>(flag, text);
}

std::vector<double> parse_gib_list(const std::string& flag, const std::string& text) {
  const std::vector<std::string> entries = split_entries(flag, text);
  std::vector<double> out;
  for (const std::string& e : entries) {
    double v = 0;
    const auto [end, ec] = std::from_chars(e.data(), e.data() + e.size(), v);  // takes "inf"
    if (ec != std::errc() || end != e.data() + e.size() || !(v >= 0))
      throw InputError(flag + ": '" + e + "' is not a size in GiB (0: none, inf: unbounded)");
    out.push_back(v);
  }
  refuse_twice(flag, out, entries);
  return out;
}

}  // namespace prefixsim::cli
