// The request patterns a workload is made of. A pattern turns "a conversation
// starts now" into requests: one for single-shot patterns (chatbot, RAG,
// code, batch summarisation, random), several spaced by think time for
// multi-turn chat. The generator (generator.h) owns arrival times, ids and
// salts; a pattern fills in the content: prompt tokens, output length (and
// output tokens where later requests re-send them), session.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/request.h"
#include "workloads/config_node.h"

namespace prefixsim::workloads {

class Pattern {
 public:
  virtual ~Pattern() = default;
  // Starts conversation `conv` and fills `out` with its first request.
  // Returns the think time in seconds before its next request, or a negative
  // number when the conversation is over.
  virtual double begin(uint64_t conv, Request& out) = 0;
  // Fills `out` with the next request of a conversation begin() (or a
  // previous resume()) said would continue.
  virtual double resume(uint64_t conv, Request& out);
  // Mean prompt tokens shared with earlier requests by construction (for
  // tests of shared-prefix lengths); 0 where sharing is only statistical.
  virtual int64_t fixed_shared_prefix_tokens() const { return 0; }
};

// The pattern names a YAML `pattern:` key accepts.
const std::vector<std::string>& pattern_names();

// Builds pattern `name` from its `params` mapping (absent: all defaults).
// `seed` seeds both its random stream and its shared content (system prompts,
// document pool). Unknown names and keys raise InputError naming `where`.
std::unique_ptr<Pattern> make_pattern(const std::string& name, const std::optional<ConfigNode>& params,
                                      uint64_t seed, const ConfigNode& where);

}  // namespace prefixsim::workloads
