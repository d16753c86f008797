#include "workloads/patterns.h"

#include <algorithm>
#include <unordered_map>

#include "sim/base/error.h"
#include "workloads/distributions.h"
#include "workloads/rng.h"

namespace prefixsim::workloads {

double Pattern::resume(uint64_t, Request&) { throw InternalError("resume() on a single-request pattern"); }

namespace {

constexpr double kMaxLen = 10'000'000;  // tokens; anything longer is a typo

// Optional keys of a pattern's `params`, with defaults.
class Params {
 public:
  Params(const std::optional<ConfigNode>& n, std::initializer_list<const char*> allowed) : n_(n) {
    if (n_) n_->expect_map(allowed);
  }
  Dist length(const char* key, Dist fallback) const {
    auto c = n_ ? n_->get(key) : std::nullopt;
    return c ? Dist::parse(*c, 0, kMaxLen) : fallback;
  }
  Dist seconds(const char* key, Dist fallback) const {
    auto c = n_ ? n_->get(key) : std::nullopt;
    return c ? Dist::parse(*c, 0, 1e7) : fallback;
  }
  int64_t integer(const char* key, int64_t fallback, int64_t lo, int64_t hi) const {
    auto c = n_ ? n_->get(key) : std::nullopt;
    return c ? c->as_int(lo, hi) : fallback;
  }
  double real(const char* key, double fallback, double lo, double hi) const {
    auto c = n_ ? n_->get(key) : std::nullopt;
    return c ? c->as_double(lo, hi) : fallback;
  }

 private:
  const std::optional<ConfigNode>& n_;
};

void append_random(Rng& rng, std::vector<int32_t>& out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out.push_back(rng.token());
}

// Content that must be the same in every request that uses it (a system
// prompt, document `tag`): drawn from its own stream, so it does not depend
// on what was generated before.
std::vector<int32_t> fixed_content(uint64_t seed, uint64_t tag, int64_t n) {
  Rng r(derive_seed(seed, tag));
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(n));
  append_random(r, out, n);
  return out;
}

void set_prompt(Request& out) { out.prompt_len = static_cast<int64_t>(out.tokens.size()); }

// Stream tags: distinct per purpose inside one pattern's seed.
enum : uint64_t { kStreamMain = 1, kSystemPrompt = 2, kDocuments = 1'000'000 };

// chatbot: one of `system_prompts` fixed system prompts + a short unique user
// message.
class Chatbot final : public Pattern {
 public:
  Chatbot(const std::optional<ConfigNode>& p, uint64_t seed)
      : rng_(derive_seed(seed, kStreamMain)) {
    Params r(p, {"system_prompt_tokens", "system_prompts", "user_tokens", "output_tokens"});
    const int64_t sys = r.integer("system_prompt_tokens", 512, 0, static_cast<int64_t>(kMaxLen));
    const int64_t count = r.integer("system_prompts", 1, 1, 10000);
    for (int64_t i = 0; i < count; ++i)
      system_.push_back(fixed_content(seed, kSystemPrompt + 7919 * static_cast<uint64_t>(i), sys));
    user_ = r.length("user_tokens", Dist::lognormal(32, 0.6, 4, 512));
    output_ = r.length("output_tokens", Dist::lognormal(200, 0.7, 8, 2048));
  }
  double begin(uint64_t, Request& out) override {
    const auto& sys = system_[rng_.below(system_.size())];
    out.tokens.assign(sys.begin(), sys.end());
    append_random(rng_, out.tokens, user_.sample_int(rng_, 1));
    set_prompt(out);
    out.output_len = output_.sample_int(rng_, 1);
    return -1;
  }
  int64_t fixed_shared_prefix_tokens() const override { return static_cast<int64_t>(system_[0].size()); }

 private:
  Rng rng_;
  std::vector<std::vector<int32_t>> system_;
  Dist user_, output_;
};

// multi-turn: a shared system prompt, then sessions of `turns` turns; each
// turn re-sends the whole history (earlier user messages and the model's
// outputs, which are therefore recorded as output_tokens) plus a new message.
class MultiTurn final : public Pattern {
 public:
  MultiTurn(const std::optional<ConfigNode>& p, uint64_t seed) : rng_(derive_seed(seed, kStreamMain)) {
    Params r(p, {"system_prompt_tokens", "turns", "user_tokens", "output_tokens", "think_time_s"});
    system_ = fixed_content(seed, kSystemPrompt, r.integer("system_prompt_tokens", 256, 0, 1'000'000));
    turns_ = r.length("turns", Dist::uniform(2, 10));
    user_ = r.length("user_tokens", Dist::lognormal(80, 0.7, 4, 4096));
    output_ = r.length("output_tokens", Dist::lognormal(250, 0.6, 8, 4096));
    think_ = r.seconds("think_time_s", Dist::lognormal(20, 0.8, 1, 600));
  }
  double begin(uint64_t conv, Request& out) override {
    Session& s = sessions_[conv];
    s.history = system_;
    s.turns_left = turns_.sample_int(rng_, 1);
    return turn(conv, s, out);
  }
  double resume(uint64_t conv, Request& out) override {
    auto it = sessions_.find(conv);
    if (it == sessions_.end()) throw InternalError("multi-turn: resume of an unknown session");
    return turn(conv, it->second, out);
  }
  int64_t fixed_shared_prefix_tokens() const override { return static_cast<int64_t>(system_.size()); }

 private:
  struct Session {
    std::vector<int32_t> history;
    int64_t turns_left = 0;
  };
  double turn(uint64_t conv, Session& s, Request& out) {
    append_random(rng_, s.history, user_.sample_int(rng_, 1));
    out.tokens = s.history;
    set_prompt(out);
    out.output_len = output_.sample_int(rng_, 1);
    out.output_tokens.clear();
    append_random(rng_, out.output_tokens, out.output_len);
    out.session = "s" + std::to_string(conv);
    if (--s.turns_left <= 0) {
      sessions_.erase(conv);
      return -1;
    }
    s.history.insert(s.history.end(), out.output_tokens.begin(), out.output_tokens.end());
    return think_.sample(rng_);
  }
  Rng rng_;
  std::vector<int32_t> system_;
  Dist turns_, user_, output_, think_;
  std::unordered_map<uint64_t, Session> sessions_;
};

// rag: shared instruction + `documents_per_request` documents drawn from a
// Zipf-popular pool + a unique question. Documents are generated on demand
// from their index, so the pool costs no memory.
class Rag final : public Pattern {
 public:
  Rag(const std::optional<ConfigNode>& p, uint64_t seed) : seed_(seed), rng_(derive_seed(seed, kStreamMain)) {
    Params r(p, {"instruction_tokens", "documents", "zipf_s", "document_tokens", "documents_per_request",
                 "question_tokens", "output_tokens"});
    instruction_ = fixed_content(seed, kSystemPrompt, r.integer("instruction_tokens", 256, 0, 1'000'000));
    zipf_ = Zipf(static_cast<uint64_t>(r.integer("documents", 20000, 1, 100'000'000)),
                 r.real("zipf_s", 0.95, 0, 10));
    doc_len_ = r.length("document_tokens", Dist::lognormal(2048, 0.25, 512, 8192));
    per_request_ = r.integer("documents_per_request", 1, 1, 1000);
    question_ = r.length("question_tokens", Dist::lognormal(48, 0.5, 4, 1024));
    output_ = r.length("output_tokens", Dist::lognormal(200, 0.6, 8, 2048));
  }
  double begin(uint64_t, Request& out) override {
    out.tokens = instruction_;
    for (int64_t k = 0; k < per_request_; ++k) {
      const uint64_t doc = zipf_.sample(rng_);
      Rng d(derive_seed(seed_, kDocuments + doc));
      append_random(d, out.tokens, doc_len_.sample_int(d, 1));
    }
    append_random(rng_, out.tokens, question_.sample_int(rng_, 1));
    set_prompt(out);
    out.output_len = output_.sample_int(rng_, 1);
    return -1;
  }
  int64_t fixed_shared_prefix_tokens() const override { return static_cast<int64_t>(instruction_.size()); }

 private:
  uint64_t seed_;
  Rng rng_;
  std::vector<int32_t> instruction_;
  Zipf zipf_;
  Dist doc_len_, question_, output_;
  int64_t per_request_ = 1;
};

// code: a pool of source files (500-8K tokens) drawn by Zipf popularity; a
// request sends the system prompt, the file's current content and a unique
// instruction; then the file is edited near its end (the edit starts
// `edit_from_end_tokens` before the end and rewrites the rest, changing the
// length by `edit_delta_tokens`), so the next request of that file shares
// only the text before the edit.
class Code final : public Pattern {
 public:
  Code(const std::optional<ConfigNode>& p, uint64_t seed) : seed_(seed), rng_(derive_seed(seed, kStreamMain)) {
    Params r(p, {"system_prompt_tokens", "files", "zipf_s", "file_tokens", "min_file_tokens", "max_file_tokens",
                 "edit_from_end_tokens", "edit_delta_tokens", "question_tokens", "output_tokens"});
    system_ = fixed_content(seed, kSystemPrompt, r.integer("system_prompt_tokens", 0, 0, 1'000'000));
    zipf_ = Zipf(static_cast<uint64_t>(r.integer("files", 1000, 1, 10'000'000)), r.real("zipf_s", 0.85, 0, 10));
    file_len_ = r.length("file_tokens", Dist::uniform(500, 8000));
    min_len_ = r.integer("min_file_tokens", 500, 1, static_cast<int64_t>(kMaxLen));
    max_len_ = r.integer("max_file_tokens", 8000, min_len_, static_cast<int64_t>(kMaxLen));
    edit_from_end_ = r.length("edit_from_end_tokens", Dist::lognormal(400, 1.0, 1, 8000));
    // The delta may be negative: not a length, so bounds of its own.
    if (p && p->get("edit_delta_tokens"))
      edit_delta_ = Dist::parse(*p->get("edit_delta_tokens"), -kMaxLen, kMaxLen);
    else
      edit_delta_ = Dist::uniform(-64, 192);
    question_ = r.length("question_tokens", Dist::lognormal(40, 0.6, 4, 1024));
    output_ = r.length("output_tokens", Dist::lognormal(300, 0.7, 8, 4096));
  }
  double begin(uint64_t, Request& out) override {
    const uint64_t f = zipf_.sample(rng_);
    auto [it, fresh] = files_.try_emplace(f);
    std::vector<int32_t>& file = it->second;
    if (fresh) {
      Rng d(derive_seed(seed_, kDocuments + f));
      append_random(d, file, std::clamp(file_len_.sample_int(d, 1), min_len_, max_len_));
    }
    out.tokens = system_;
    out.tokens.insert(out.tokens.end(), file.begin(), file.end());
    append_random(rng_, out.tokens, question_.sample_int(rng_, 1));
    set_prompt(out);
    out.output_len = output_.sample_int(rng_, 1);
    edit(file);
    return -1;
  }
  int64_t fixed_shared_prefix_tokens() const override { return static_cast<int64_t>(system_.size()); }

 private:
  void edit(std::vector<int32_t>& file) {
    const int64_t len = static_cast<int64_t>(file.size());
    const int64_t from = std::max<int64_t>(0, len - edit_from_end_.sample_int(rng_, 1));
    const int64_t delta = static_cast<int64_t>(std::llround(edit_delta_.sample(rng_)));
    const int64_t new_len = std::clamp(len + delta, std::max(min_len_, from), max_len_);
    file.resize(static_cast<size_t>(from));
    append_random(rng_, file, new_len - from);
  }
  uint64_t seed_;
  Rng rng_;
  std::vector<int32_t> system_;
  Zipf zipf_;
  Dist file_len_, edit_from_end_, edit_delta_, question_, output_;
  int64_t min_len_ = 500, max_len_ = 8000;
  std::unordered_map<uint64_t, std::vector<int32_t>> files_;
};

// batch-summarization: a fixed instruction + a unique document.
class BatchSummarization final : public Pattern {
 public:
  BatchSummarization(const std::optional<ConfigNode>& p, uint64_t seed) : rng_(derive_seed(seed, kStreamMain)) {
    Params r(p, {"instruction_tokens", "document_tokens", "output_tokens"});
    instruction_ = fixed_content(seed, kSystemPrompt, r.integer("instruction_tokens", 64, 0, 1'000'000));
    doc_ = r.length("document_tokens", Dist::lognormal(500, 0.5, 64, 8192));
    output_ = r.length("output_tokens", Dist::lognormal(150, 0.5, 8, 1024));
  }
  double begin(uint64_t, Request& out) override {
    out.tokens = instruction_;
    append_random(rng_, out.tokens, doc_.sample_int(rng_, 1));
    set_prompt(out);
    out.output_len = output_.sample_int(rng_, 1);
    return -1;
  }
  int64_t fixed_shared_prefix_tokens() const override { return static_cast<int64_t>(instruction_.size()); }

 private:
  Rng rng_;
  std::vector<int32_t> instruction_;
  Dist doc_, output_;
};

// random: unique prompts, nothing shared.
class RandomPrompts final : public Pattern {
 public:
  RandomPrompts(const std::optional<ConfigNode>& p, uint64_t seed) : rng_(derive_seed(seed, kStreamMain)) {
    Params r(p, {"prompt_tokens", "output_tokens"});
    prompt_ = r.length("prompt_tokens", Dist::lognormal(1000, 0.8, 16, 16000));
    output_ = r.length("output_tokens", Dist::lognormal(200, 0.6, 8, 2048));
  }
  double begin(uint64_t, Request& out) override {
    append_random(rng_, out.tokens, prompt_.sample_int(rng_, 1));
    set_prompt(out);
    out.output_len = output_.sample_int(rng_, 1);
    return -1;
  }

 private:
  Rng rng_;
  Dist prompt_, output_;
};

}  // namespace

const std::vector<std::string>& pattern_names() {
  static const std::vector<std::string> names = {"chatbot", "multi-turn", "rag", "code", "batch-summarization",
                                                 "random"};
  return names;
}

std::unique_ptr<Pattern> make_pattern(const std::string& name, const std::optional<ConfigNode>& params,
                                      uint64_t seed, const ConfigNode& where) {
  if (name == "chatbot") return std::make_unique<Chatbot>(params, seed);
  if (name == "multi-turn") return std::make_unique<MultiTurn>(params, seed);
  if (name == "rag") return std::make_unique<Rag>(params, seed);
  if (name == "code") return std::make_unique<Code>(params, seed);
  if (name == "batch-summarization") return std::make_unique<BatchSummarization>(params, seed);
  if (name == "random") return std::make_unique<RandomPrompts>(params, seed);
  std::string list;
  for (const auto& n : pattern_names()) list += (list.empty() ? "" : ", ") + n;
  where.fail("unknown pattern '" + name + "' (" + list + ")");
}

}  // namespace prefixsim::workloads
