// One self-overwriting status line on a terminal, for long runs (replay's
// steps, compare's pairs): drawn at most every 200 ms, and only once the
// work has run for a second, so short runs print nothing; clear() wipes it
// before the final summary. Callers pass enabled = "stderr is a TTY and not
// --quiet". Not thread-safe: threads share one behind a mutex.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

namespace prefixsim {

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressLine(bool enabled, std::FILE* out = stderr, std::function<Clock::time_point()> now = Clock::now);

  // Whether a draw is due now; the caller then formats its text and calls
  // draw() (so a line that is not due costs no formatting).
  bool due();
  void draw(const std::string& text);
  // Wipes the line, if one was drawn.
  void clear() const;
  bool drew() const { return drew_; }

 private:
  static constexpr auto kFirstDrawAfter = std::chrono::seconds(1);
  static constexpr auto kRedrawEvery = std::chrono::milliseconds(200);
  bool enabled_;
  std::FILE* out_;
  std::function<Clock::time_point()> now_;
  Clock::time_point started_, last_draw_;
  size_t width_ = 0;  // of the longest line drawn, for clear()
  bool drew_ = false;
};

}  // namespace prefixsim
