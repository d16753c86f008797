// A RequestSource over requests already in memory: compare's engine mode
// replays one parsed trace for every pair, and tests build traces by hand.
// Non-owning over a span (the caller keeps the requests alive), or owning a
// vector moved in.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/request_source.h"

namespace prefixsim {

class VectorSource final : public RequestSource {
 public:
  explicit VectorSource(std::span<const Request> reqs, std::string format = "vector", std::string origin = "memory")
      : view_(reqs), format_(std::move(format)), origin_(std::move(origin)) {}
  explicit VectorSource(std::vector<Request>&& reqs, std::string format = "vector", std::string origin = "memory")
      : owned_(std::move(reqs)), view_(owned_), format_(std::move(format)), origin_(std::move(origin)) {}
  VectorSource(const VectorSource&) = delete;
  VectorSource& operator=(const VectorSource&) = delete;

  bool next(Request& out) override {
    if (i_ == view_.size()) return false;
    out = view_[i_++];
    return true;
  }
  std::string format() const override { return format_; }
  std::string origin() const override { return origin_; }

 private:
  std::vector<Request> owned_;
  std::span<const Request> view_;
  std::string format_, origin_;
  size_t i_ = 0;
};

}  // namespace prefixsim
