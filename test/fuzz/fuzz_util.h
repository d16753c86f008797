// Shared helpers for the libFuzzer targets: every target feeds one input to
// one parser; an InputError is an accepted outcome, anything else (a crash, a
// sanitizer report, an InternalError, any other exception) aborts the run.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>

#include "policies/registry.h"
#include "sim/base/error.h"
#include "sim/engine/request_source.h"

namespace prefixsim::fuzz {

// A per-process temp file that holds the current input (for parsers that read
// from a path). Rewritten on every call.
inline std::string write_temp(const uint8_t* data, size_t size, const char* suffix) {
  static std::string dir;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/prefixsim-fuzz-" + std::to_string(::getpid());
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) std::abort();
  }
  const std::string path = dir + "/input" + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

// Drains a request source, bounded so that a large valid input cannot turn
// one fuzz iteration into a benchmark; validates every request it yields.
inline void drain(RequestSource& src, size_t max_requests = 4096) {
  Request r;
  for (size_t i = 0; i < max_requests && src.next(r); ++i) {
    const std::string err = r.validate();
    if (!err.empty()) {
      std::fprintf(stderr, "reader yielded an invalid request: %s\n", err.c_str());
      std::abort();
    }
  }
}

// Runs `body`; InputError is fine, anything else is a finding.
template <class F>
int guarded(F&& body) {
  try {
    body();
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}

// The value of the first integer after `"key"` in `text`, or -1.
inline long long first_int_after(std::string_view text, std::string_view key) {
  const size_t at = text.find(key);
  if (at == std::string_view::npos) return -1;
  size_t i = at + key.size();
  while (i < text.size() && (text[i] == '"' || text[i] == ':' || text[i] == ' ' || text[i] == '\t')) ++i;
  long long v = 0;
  bool any = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    any = true;
    if (v > 1'000'000'000'000LL) return v;
    v = v * 10 + (text[i] - '0');
  }
  return any ? v : -1;
}

// One input as a JSON-lines script (`prefixsim ops` / `prefixsim sched`):
// run(in, file, out, opts) with the pool's invariants checked after every
// line and vLLM's lru policy. Pools up to 2^28 blocks are valid; a fuzz
// iteration must not allocate gigabytes, so inputs asking for large pools
// are skipped.
template <class Options, class Runner>
int script(const uint8_t* data, size_t size, Runner&& run) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (first_int_after(text, "\"num_blocks\"") > 100'000) return 0;
  std::istringstream in{std::string(text)};
  std::ostringstream out;
  return guarded([&] {
    Options opts;
    opts.check_invariants = true;
    opts.make_policy = [] { return make_policy("lru"); };
    run(in, "fuzz.jsonl", out, opts);
  });
}

}  // namespace prefixsim::fuzz
