// The calibration grid (gpu/calibration_grid.h): what the GPU measures must
// cover every term the cost-model fit solves for, stay inside the pool, and
// become block tables the model runner accepts.
#include <catch2/catch.hpp>
#include <set>

#include "gpu/calibration_grid.h"
#include "sim/base/error.h"

using namespace prefixsim;
using namespace prefixsim::gpu;

TEST_CASE("the calibration grid has prefill, decode and mixed steps, all inside the pool", "[gpu][calibration]") {
  constexpr int64_t kPool = 320000;
  const auto grid = calibration_grid(kPool);
  std::set<std::string> kinds;
  std::set<int64_t> prefill_tokens, decode_batches, cached;
  for (const CalibrationStep& s : grid) {
    kinds.insert(s.kind);
    CHECK(s.pool_tokens() <= kPool);
    const BatchSummary b = s.summary();
    CHECK(b.seqs == static_cast<int64_t>(s.seqs.size()));
    if (s.kind == "prefill" && s.seqs.size() == 1) {
      prefill_tokens.insert(b.new_tokens);
      cached.insert(s.seqs[0].second);
    }
    if (s.kind == "decode") {
      CHECK(b.new_tokens == b.seqs);  // one token each
      decode_batches.insert(b.seqs);
    }
    if (s.kind == "mixed") CHECK(b.new_tokens > b.seqs);
  }
  CHECK(kinds == std::set<std::string>{"prefill", "decode", "mixed"});
  // A log grid wide enough to place the weight-floor breakpoint and the slope,
  // with cached context to separate the attention term from the linear one.
  CHECK(prefill_tokens.size() >= 6);
  CHECK(*prefill_tokens.begin() <= 64);
  CHECK(*prefill_tokens.rbegin() >= 8192);
  CHECK(cached.size() >= 3);
  CHECK(decode_batches.size() >= 5);
  // A smaller pool drops the steps that do not fit, and only those.
  for (const CalibrationStep& s : calibration_grid(20000)) CHECK(s.pool_tokens() <= 20000);
  CHECK(calibration_grid(20000).size() < grid.size());
}

TEST_CASE("a calibration step becomes a paged batch over distinct, shuffled blocks", "[gpu][calibration]") {
  const CalibrationStep step{"mixed", {{100, 40}, {1, 33}, {1, 16}}};
  std::vector<std::vector<BlockId>> tables;
  const PagedBatch pb = calibration_batch(step, 16, 64, tables);
  CHECK(pb.num_seqs() == 3);
  CHECK(pb.num_tokens() == 102);
  std::set<BlockId> used;
  size_t total = 0;
  for (const auto& t : tables) {
    total += t.size();
    used.insert(t.begin(), t.end());
  }
  CHECK(tables[0].size() == 9);  // ceil(140 / 16)
  CHECK(tables[1].size() == 3);  // ceil(34 / 16)
  CHECK(tables[2].size() == 2);  // ceil(17 / 16)
  CHECK(used.size() == total);
  CHECK(*used.rbegin() < 64);
  // A pool too small for the step is an input error, not a bad table.
  CHECK_THROWS_AS(calibration_batch(step, 16, 10, tables), InputError);
}
