// Helpers shared by the tests: where test data lives, optional access to
// ../shared (tests that need it skip when it is absent), running the CLI.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace prefixsim::test {

// test/data/<rel>
std::string data_path(const std::string& rel);
// ../shared/<rel> if it exists (env PREFIXSIM_SHARED overrides the root).
std::optional<std::string> shared_path(const std::string& rel);
// A fresh empty directory under the build's temp area.
std::string temp_dir(const std::string& tag);
std::string read_file(const std::string& path);
// `text` with its line `line` (1-based) replaced by `with`, or removed when
// `with` is empty: one bad-input case per line of a good file.
std::string with_line(const std::string& text, long line, const std::optional<std::string>& with);
// One parsed JSON value per non-empty line (golden outputs, runner outputs).
std::vector<nlohmann::json> parse_jsonl(const std::string& text);

// How many random or mutated cases a randomized equivalence test runs: n in
// a plain build, n / 8 under AddressSanitizer. The sanitizer run is there to
// catch memory errors on the same code paths (the fuzzers cover the parsers
// there too), and at the full counts these tests alone took minutes of CI's
// 20 (the release run keeps every case).
constexpr int sanitized_share(int n) {
#if defined(__SANITIZE_ADDRESS__)
  return n / 8 > 0 ? n / 8 : 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return n / 8 > 0 ? n / 8 : 1;
#else
  return n;
#endif
#else
  return n;
#endif
}

// True in the sanitized build (where sanitized_share divides by 8). Tests
// that replay large KV pools cut their grids there: the debug build checks
// the block pool's invariants after every operation, O(pool) each, and the
// release run keeps the whole grid.
constexpr bool kSanitized = sanitized_share(8) != 8;

// Writes `text` to dir/name and returns the path.
std::string write_text_file(const std::string& dir, const std::string& name, const std::string& text);

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};
// Runs the prefixsim binary with args (no shell), optional stdin text.
CliResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text = "");

}  // namespace prefixsim::test

// Catch2 2.13 has no SKIP: report why, leave the test case, and have the
// binary exit 77 (meson's "skipped") instead of 0 when nothing failed, so a
// test without its data never passes silently (test/catch_main.cpp). A
// binary that can skip holds only cases that need the same missing thing.
namespace prefixsim::test {
void mark_skipped();
}
#define PREFIXSIM_SKIP(msg)               \
  do {                                    \
    WARN("skipped: " << msg);             \
    ::prefixsim::test::mark_skipped();    \
    return;                               \
  } while (0)
