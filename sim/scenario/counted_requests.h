// A run's figures leave out the requests that only warmed the cache
// (Request::warmup, --warmup); the engine's totals (EngineResult) count
// them. Both collectors of a run's figures, replay's (replay_collector.h)
// and a study point's (point_run.cpp), add each finished request here and
// read the totals through counted().
#pragma once

#include <cstdint>

#include "sim/engine/engine.h"

namespace prefixsim {

struct CountedRequests {
  // Adds a finished request; false for a warm-up one (left out).
  bool add(const RequestRecord& r) {
    if (r.request && r.request->warmup) {
      ++warm;
      return false;
    }
    ++finished;
    prompt_tokens += static_cast<uint64_t>(r.prompt_tokens);
    output_tokens += static_cast<uint64_t>(r.output_tokens);
    hit_tokens += static_cast<uint64_t>(r.hit_tokens);
    tier_hit_tokens += static_cast<uint64_t>(r.tier_hit_tokens);
    return true;
  }
  // `res` with its request and token totals those of the counted requests
  // when a warm-up ran; `res` itself otherwise (a run without one reports
  // the engine's totals, byte for byte as before).
  EngineResult counted(const EngineResult& res) const {
    if (warm == 0) return res;
    EngineResult c = res;
    c.finished = finished;
    c.prompt_tokens = c.admitted_prompt_tokens = prompt_tokens;
    c.output_tokens = output_tokens;
    c.admitted_hit_tokens = hit_tokens;
    c.admitted_tier_hit_tokens = tier_hit_tokens;
    return c;
  }

  uint64_t warm = 0, finished = 0;
  uint64_t prompt_tokens = 0, output_tokens = 0, hit_tokens = 0, tier_hit_tokens = 0;
};

}  // namespace prefixsim
