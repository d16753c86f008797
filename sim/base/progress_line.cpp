#include "sim/base/progress_line.h"

#include <algorithm>

namespace prefixsim {

ProgressLine::ProgressLine(bool enabled, std::FILE* out, std::function<Clock::time_point()> now)
    : enabled_(enabled), out_(out), now_(std::move(now)) {
  started_ = last_draw_ = now_();
}

bool ProgressLine::due() {
  if (!enabled_) return false;
  const Clock::time_point t = now_();
  if (t - started_ < kFirstDrawAfter || (drew_ && t - last_draw_ < kRedrawEvery)) return false;
  last_draw_ = t;
  return true;
}

void ProgressLine::draw(const std::string& text) {
  // Padded to the longest line so far, so a shorter line leaves no tail.
  width_ = std::max(width_, text.size());
  std::fprintf(out_, "\r%-*s", static_cast<int>(width_), text.c_str());
  std::fflush(out_);
  drew_ = true;
}

void ProgressLine::clear() const {
  if (!drew_) return;
  std::fprintf(out_, "\r%*s\r", static_cast<int>(width_), "");
  std::fflush(out_);
}

}  // namespace prefixsim
