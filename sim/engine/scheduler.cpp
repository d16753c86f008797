#include "sim/engine/scheduler.h"

#include <algorithm>

#include "sim/base/error.h"

namespace prefixsim {

uint64_t PromptSumTokens::prepare(const Request& r) const {
  uint64_t sum = 0;
  for (int32_t t : r.tokens) sum += static_cast<uint64_t>(t);
  return sum;
}

int32_t PromptSumTokens::token(const Request&, uint64_t prepared, int64_t k) const {
  return static_cast<int32_t>((prepared + static_cast<uint64_t>(k)) % 50000 + 1);
}

void StepPlan::clear() {
  scheduled.clear();
  admitted.clear();
  preempted.clear();
  finished.clear();
  loads.clear();
  prefix_stats = {};
  tier_stats = {};
  batch.clear();
  prefill_tokens = 0;
  decode_tokens = 0;
}

Scheduler::Scheduler(const SchedulerConfig& cfg, KvCacheManager& kv, const TokenSource& tokens)
    : cfg_(cfg), kv_(kv), tokens_(tokens) {
  if (cfg_.max_num_seqs < 1) throw InputError("max_num_seqs must be at least 1");
  if (cfg_.max_num_batched_tokens < 1) throw InputError("max_num_batched_tokens must be at least 1");
  if (cfg_.long_prefill_token_threshold < 0) throw InputError("long_prefill_token_threshold must not be negative");
  if (cfg_.max_model_len < 0) throw InputError("max_model_len must not be negative");
}

int64_t Scheduler::blocks_for(int64_t tokens) const {
  const int64_t b = kv_.block_size();
  return (tokens + b - 1) / b;
}

std::string Scheduler::never_fits(int64_t num_tokens) const {
  const int64_t usable = kv_.pool().num_usable();
  if (blocks_for(num_tokens) > usable)
    return "needs " + std::to_string(blocks_for(num_tokens)) + " blocks of " + std::to_string(kv_.block_size()) +
           " tokens for " + std::to_string(num_tokens) + " tokens, but the pool has only " + std::to_string(usable) +
           " usable blocks";
  // Without chunking a waiting request must be scheduled whole (§9); the
  // threshold cap applies first.
  int64_t n = num_tokens;
  if (cfg_.long_prefill_token_threshold > 0 && n > cfg_.long_prefill_token_threshold)
    n = cfg_.long_prefill_token_threshold;
  if (!cfg_.enable_chunked_prefill && n > cfg_.max_num_batched_tokens)
    return std::to_string(num_tokens) + " tokens exceed max_num_batched_tokens " +
           std::to_string(cfg_.max_num_batched_tokens) + " and chunked prefill is off";
  return {};
}

SlotId Scheduler::add_request(Request&& r) {
  if (r.prompt_len <= 0) throw InputError("request '" + r.id + "' has an empty prompt");
  if (cfg_.max_model_len > 0 && r.prompt_len >= cfg_.max_model_len)
    throw InputError("request '" + r.id + "' has a prompt of " + std::to_string(r.prompt_len) +
                     " tokens, which leaves no room for an output under max_model_len " +
                     std::to_string(cfg_.max_model_len));
  SlotId s;
  if (!free_slots_.empty()) {
    s = free_slots_.back();
    free_slots_.pop_back();
  } else {
    s = static_cast<SlotId>(seqs_.size());
    seqs_.push_back(std::make_unique<Seq>());
  }
  Seq& q = *seqs_[s];
  q.req = std::move(r);
  // The prompt is hashed at its first lookup (prepare_for_lookup), not here:
  // a deep waiting queue would otherwise hold a hash chain per request. A
  // chain hashed upstream (a prefix-aware router's) is kept for that lookup
  // while few requests wait, so it is not hashed twice; behind a deep queue
  // it is dropped (the same hashes come again at the lookup).
  q.chain.reset(kv_.block_size(), &q.req.extras);
  if (waiting_.size() >= kKeepChainsWaiting) q.req.prompt_chain = BlockHashChain{};
  q.prepared = false;
  q.kv.blocks.clear();
  q.kv.num_cached = 0;
  q.num_tokens = q.req.prompt_len;
  q.num_computed = 0;
  q.num_outputs = 0;
  q.placeholders = 0;
  q.max_tokens = std::max<int64_t>(q.req.output_len, 1);
  q.token_key = tokens_.prepare(q.req);
  q.num_preemptions = 0;
  q.status = SeqStatus::kWaiting;
  q.loading = false;
  q.remote_pending = q.req.leg == Request::Leg::kDecode;
  waiting_.push_back(s);  // _enqueue_waiting_request: the tail
  ++live_;
  return s;
}

void Scheduler::prepare_for_lookup(Seq& q) {
  if (q.prepared) return;
  q.prepared = true;
  // Sized for the whole sequence: decoding appends without regrowing.
  // (Capped by the pool: a trace's output_len may be far beyond what runs.)
  const int64_t most =
      std::min<int64_t>(q.req.prompt_len + q.max_tokens, int64_t{kv_.pool().num_usable()} * kv_.block_size());
  q.kv.blocks.reserve(static_cast<size_t>(blocks_for(most)));
  // Hashes are only needed when something can be cached.
  if (!kv_.pool().caching_enabled()) return;
  const bool hashed = q.req.has_prompt_chain(kv_.block_size());  // upstream: taken, not hashed again
  if (hashed) q.req.take_prompt_chain(q.chain, kv_.block_size());
  q.chain.reserve_tokens(most);
  if (!hashed) q.req.append_prompt_to(q.chain);
}

void Scheduler::release(SlotId s) {
  Seq& q = *seqs_[s];
  q.req = Request{};  // the request's own data goes now
  // So do its chain and block table: the slot may next hold a request that
  // waits long before its first lookup.
  q.chain = BlockHashChain(kv_.block_size(), &q.req.extras);
  std::vector<BlockId>().swap(q.kv.blocks);
  free_slots_.push_back(s);
  --live_;
}

void Scheduler::push_scheduled(SlotId s, int64_t n) {
  Seq& q = *seqs_[s];
  ScheduledEntry e;
  e.slot = s;
  e.num_new_tokens = n;
  e.num_computed_before = q.num_computed;
  // _update_after_schedule: c advances now, before the model runs.
  q.num_computed += n;
  // §6, the model runner's discard rule: only a chunk that reaches the end
  // of the current sequence keeps its sampled token.
  // With async scheduling the end of the sequence includes the tokens still
  // in flight (placeholders); without it they are always 0.
  const int64_t known_and_pending = q.num_tokens + q.placeholders;
  e.samples = q.num_computed >= known_and_pending;
  e.first_token = e.samples && q.num_outputs + q.placeholders == 0;
  const bool decode =
      n == 1 && q.num_outputs + q.placeholders > 0 && e.num_computed_before == known_and_pending - 1;
  (decode ? plan_.decode_tokens : plan_.prefill_tokens) += n;
  plan_.scheduled.push_back(e);
  // AsyncScheduler._update_after_schedule: a chunk that samples leaves a
  // placeholder for its token.
  if (cfg_.async_scheduling && e.samples) ++q.placeholders;
}

void Scheduler::preempt(SlotId victim) {
  // _preempt_request (§3.2): free last block first, recompute from 0, keep
  // the outputs, go to the HEAD of waiting.
  Seq& q = *seqs_[victim];
  kv_.free(q.kv);
  q.status = SeqStatus::kPreempted;
  q.num_computed = 0;
  ++q.num_preemptions;
  // Ahead of every waiting request, but behind those parked with KV loaded
  // or loading from tiers, which hold blocks: vLLM schedules its
  // skipped_waiting queue (them) first. A preempted request that could not
  // fit ahead of them would keep them, and itself, waiting for good
  // (vllm-project/vllm#57841, #45406).
  auto at = waiting_.begin();
  while (at != waiting_.end() && !seqs_[*at]->kv.blocks.empty()) ++at;
  waiting_.insert(at, victim);
  plan_.preempted.push_back(victim);
  ++total_preemptions_;
}

// §3.1: walk `running` while the budget lasts. A request that cannot get its
// blocks preempts the tail of `running` until it can, or until it is the tail
// itself (self-preemption ends the phase).
void Scheduler::schedule_running(int64_t& budget, bool& preempted_any) {
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    const SlotId s = running_[i];
    Seq& q = *seqs_[s];
    // Async: no step beyond the one whose in-flight token is the last
    // (scheduler.py's "avoid scheduling an extra step" test).
    if (q.placeholders > 0 && q.num_computed + 2 - q.placeholders >= q.req.prompt_len + q.max_tokens) {
      ++i;
      continue;
    }
    int64_t n = q.num_tokens + q.placeholders - q.num_computed;
    if (cfg_.long_prefill_token_threshold > 0 && n > cfg_.long_prefill_token_threshold)
      n = cfg_.long_prefill_token_threshold;
    n = std::min(n, budget);
    if (cfg_.max_model_len > 0) n = std::min(n, cfg_.max_model_len - 1 - q.num_computed);
    if (n <= 0) {
      ++i;
      continue;
    }
    for (;;) {
      // Running requests never use the whole-sequence admission test (§5.2).
      if (kv_.allocate(q.kv, q.chain, q.num_tokens, q.num_computed, n, {}, 0, false)) {
        push_scheduled(s, n);
        budget -= n;
        ++i;
        break;
      }
      const SlotId victim = running_.back();
      running_.pop_back();
      preempt(victim);
      preempted_any = true;
      if (victim == s) return;
    }
  }
}

// §3.3: admit from the head of `waiting` only (head-of-line blocking). A
// request loading from KV tiers does not block: it is set aside while its
// load runs and goes back to the head afterwards, in order (vLLM's
// skipped_waiting_requests).
void Scheduler::schedule_waiting(int64_t& budget) {
  while (!waiting_.empty() && budget > 0) {
    // max_num_seqs is checked before the lookup: a request kept out by S is
    // not looked up and not counted.
    if (static_cast<int64_t>(running_.size()) >= cfg_.max_num_seqs) break;
    if (!admit_waiting(waiting_.front(), budget)) break;
  }
  waiting_.insert(waiting_.begin(), set_aside_.begin(), set_aside_.end());
  set_aside_.clear();
}

bool Scheduler::admit_waiting(SlotId s, int64_t& budget) {
  Seq& q = *seqs_[s];
  Admission adm{s, 0, q.status == SeqStatus::kPreempted, 0};
  if (q.loading) {
    if (now_ < q.load_ready) {  // still loading: passed over
      waiting_.pop_front();
      set_aside_.push_back(s);
      return true;
    }
    // Loaded (vLLM's _update_waiting_for_remote_kv): its blocks are cached
    // now and it computes from there; no second lookup.
    q.loading = false;
    --num_loading_;
    kv_.cache_computed(q.kv, q.chain, q.load_until);
    q.num_computed = q.load_until;
  }
  const bool loaded = q.num_computed > 0;
  LookupResult hit;
  if (loaded) {
    adm.hit_tokens = q.load_gpu_hit;
    adm.tier_hit_tokens = q.req.leg == Request::Leg::kDecode ? 0 : q.load_until - q.load_gpu_hit;
  } else {
    kv_.pool().policy().on_request(lookup_counter_++);
    prepare_for_lookup(q);
    // The lookup's stats are recorded now, whether or not it is admitted (§8).
    hit = kv_.lookup(q.chain, q.num_tokens, q.num_preemptions > 0, !q.req.warmup);
    if (q.remote_pending) {
      const LoadOutcome lo = start_remote_load(s, hit);
      return lo == LoadOutcome::kStarted;  // no room: it waits at the head
    }
    if (tiers_) {
      const LoadOutcome lo = start_load(s, hit);
      if (lo == LoadOutcome::kStarted) return true;
      if (lo == LoadOutcome::kNoRoom) return false;  // it waits at the head, as a refused admission does
    }
    adm.hit_tokens = hit.hit_tokens;
  }
  const int64_t computed = loaded ? q.num_computed : 0;
  int64_t n = q.num_tokens - computed - hit.hit_tokens;
  if (cfg_.long_prefill_token_threshold > 0 && n > cfg_.long_prefill_token_threshold)
    n = cfg_.long_prefill_token_threshold;
  if (!cfg_.enable_chunked_prefill && n > budget) return false;
  n = std::min(n, budget);
  if (!kv_.allocate(q.kv, q.chain, q.num_tokens, computed, n, hit.blocks, hit.hit_tokens, cfg_.full_sequence_must_fit))
    return false;
  waiting_.pop_front();
  running_.push_back(s);
  q.status = SeqStatus::kRunning;
  if (!loaded) q.num_computed = hit.hit_tokens;
  // The connector offers an admitted request's GPU hits to the tiers too.
  if (tiers_) tiers_->offer(q.chain.hashes(), {}, 0, static_cast<size_t>(adm.hit_tokens / kv_.block_size()));
  plan_.admitted.push_back(adm);
  push_scheduled(s, n);
  budget -= n;
  return true;
}

// The tiers' continuation of the GPU prefix: when they hold blocks, the
// request takes GPU blocks for its hits and those (vLLM's allocate_slots
// with delay_cache_blocks) and waits for the load; true when it did.
Scheduler::LoadOutcome Scheduler::start_load(SlotId s, const LookupResult& hit) {
  Seq& q = *seqs_[s];
  const int64_t B = kv_.block_size();
  const size_t gpu_blocks = hit.blocks.size();
  const size_t most = std::min(q.chain.hashes().size(), static_cast<size_t>((q.num_tokens - 1) / B));
  const size_t found = tiers_->lookup(q.chain.hashes(), {}, gpu_blocks, most, now_);
  PrefixCacheStats unused;  // a warm-up request's lookup is not counted
  PrefixCacheStats& ts = q.req.warmup ? unused : plan_.tier_stats;
  (q.num_preemptions > 0 ? ts.preempted_requests : ts.requests) += 1;
  (q.num_preemptions > 0 ? ts.preempted_queries : ts.queries) += static_cast<uint64_t>(q.num_tokens);
  if (found == 0) return LoadOutcome::kNone;
  const int64_t tokens = static_cast<int64_t>(found) * B;
  if (!kv_.allocate_for_load(q.kv, q.chain, q.num_tokens, hit.blocks, hit.hit_tokens, tokens,
                             cfg_.full_sequence_must_fit, inflight_prefill_reserved_blocks()))
    return LoadOutcome::kNoRoom;
  (q.num_preemptions > 0 ? ts.preempted_hits : ts.hits) += static_cast<uint64_t>(tokens);
  if (tiers_->observed())  // the real backend mode copies the blocks' KV now
    for (size_t i = gpu_blocks; i < gpu_blocks + found; ++i) tiers_->note_loaded(i, q.chain.hashes()[i], q.kv.blocks[i]);
  set_aside_loading(s, hit.hit_tokens + tokens, hit.hit_tokens, tokens, tiers_->load(now_));
  return LoadOutcome::kStarted;
}

// vLLM's NixlConnector on the decode side (get_num_new_matched_tokens with
// do_remote_prefill): every prompt token past the local prefix comes from
// the prefill instance, blocks allocated now (the last, partial one too);
// once read, the last prompt token is recomputed to sample the first output
// (_update_waiting_for_remote_kv). Only at the first admission: a preempted
// decode leg recomputes locally, as do_remote_prefill is cleared once used.
Scheduler::LoadOutcome Scheduler::start_remote_load(SlotId s, const LookupResult& hit) {
  Seq& q = *seqs_[s];
  const int64_t tokens = q.num_tokens - hit.hit_tokens;
  if (!kv_.allocate_for_load(q.kv, q.chain, q.num_tokens, hit.blocks, hit.hit_tokens, tokens,
                             cfg_.full_sequence_must_fit, inflight_prefill_reserved_blocks()))
    return LoadOutcome::kNoRoom;
  q.remote_pending = false;
  set_aside_loading(s, q.num_tokens - 1, hit.hit_tokens, tokens, kRemotePending);
  return LoadOutcome::kStarted;
}

void Scheduler::set_aside_loading(SlotId s, int64_t load_until, int64_t gpu_hit, int64_t tokens, TimeNs ready) {
  Seq& q = *seqs_[s];
  q.loading = true;
  ++num_loading_;
  q.load_ready = ready;
  q.load_gpu_hit = gpu_hit;
  q.load_until = load_until;
  plan_.loads.push_back({s, tokens, ready});
  waiting_.pop_front();
  set_aside_.push_back(s);
}

void Scheduler::set_load_ready(SlotId s, TimeNs ready) {
  Seq& q = *seqs_[s];
  if (!q.loading || q.load_ready != kRemotePending) throw InternalError("scheduler: no remote load pending in that slot");
  q.load_ready = ready;
}

void Scheduler::release_held(uint32_t ticket) {
  const auto it = held_.find(ticket);
  if (it == held_.end()) throw InternalError("scheduler: no blocks held for ticket " + std::to_string(ticket));
  kv_.free(it->second);
  held_.erase(it);
}

// vLLM's reservation for async loads (vllm-project/vllm#44560): a load may
// not take the blocks that requests already loading or loaded (they hold
// blocks while they wait) and running prefills still need to finish their
// tokens. Without it several loads each hold part of a small pool, none can
// take the rest, and nothing runs (vllm-project/vllm#45388).
int64_t Scheduler::inflight_prefill_reserved_blocks() const {
  int64_t reserved = 0;
  auto remaining = [&](const Seq& q) {
    return std::max<int64_t>(blocks_for(q.num_tokens) - static_cast<int64_t>(q.kv.blocks.size()), 0);
  };
  for (SlotId s : running_)
    if (seqs_[s]->num_computed + 1 < seqs_[s]->num_tokens) reserved += remaining(*seqs_[s]);  // still prefilling
  for (SlotId s : waiting_)
    if (!seqs_[s]->kv.blocks.empty()) reserved += remaining(*seqs_[s]);
  for (SlotId s : set_aside_)
    if (!seqs_[s]->kv.blocks.empty()) reserved += remaining(*seqs_[s]);
  return reserved;
}

TimeNs Scheduler::next_load_ready() const {
  TimeNs t = INT64_MAX;
  for (SlotId s : waiting_)
    if (seqs_[s]->loading) t = std::min(t, seqs_[s]->load_ready);
  return t;
}

const StepPlan& Scheduler::schedule() {
  // The requests reported finished by the last step are gone now.
  for (SlotId s : finished_pending_) release(s);
  finished_pending_.clear();
  plan_.clear();
  int64_t budget = cfg_.max_num_batched_tokens;
  bool preempted_any = false;
  schedule_running(budget, preempted_any);
  // No admission in a step that preempted (L545).
  if (!preempted_any) schedule_waiting(budget);
  plan_.prefix_stats = kv_.take_stats();
  // Built last: block tables are final once scheduling is done (victims are
  // never scheduled requests, so no scheduled table changes after its entry).
  for (const ScheduledEntry& e : plan_.scheduled) {
    const Seq& q = *seqs_[e.slot];
    plan_.batch.seqs.push_back({e.num_new_tokens, e.num_computed_before, q.kv.blocks});
    plan_.batch.origins.push_back({&q.req, q.token_key});
  }
  return plan_;
}

void Scheduler::update_from_output() { apply_output(plan_); }

void Scheduler::update_from_output(StepPlan& plan) {
  if (!cfg_.async_scheduling) throw InternalError("scheduler: a plan in flight needs async scheduling");
  apply_output(plan);
}

void Scheduler::apply_output(StepPlan& plan) {
  bool finished_waiting = false;
  for (const ScheduledEntry& e : plan.scheduled) {
    if (!e.samples) continue;
    Seq& q = *seqs_[e.slot];
    const int32_t tok = tokens_.token(q.req, q.token_key, q.num_outputs);
    if (kv_.pool().caching_enabled()) q.chain.append_token(tok);
    ++q.num_tokens;
    ++q.num_outputs;
    if (q.placeholders > 0) {
      // AsyncScheduler._update_request_with_output: the token replaces its
      // placeholder; a running request's blocks are hashed up to what is
      // now known and computed (cache_blocks), before a stop frees them.
      --q.placeholders;
      if (q.status == SeqStatus::kRunning) kv_.cache_computed(q.kv, q.chain, q.num_computed - q.placeholders);
    }
    // check_stop: max_tokens, or the model length.
    if (q.num_outputs >= q.max_tokens || (cfg_.max_model_len > 0 && q.num_tokens >= cfg_.max_model_len)) {
      // Freed right away, in scheduled order: this sets the free-queue order.
      // (Async: a request preempted while its last token was in flight
      // holds no blocks; it leaves `waiting`.)
      // A prefill leg's blocks wait for the decode side to read them (none
      // when it was preempted with its token in flight: async scheduling).
      if (q.req.leg == Request::Leg::kPrefill) {
        const auto [held, fresh] = held_.try_emplace(q.req.ticket);
        if (!fresh) throw InternalError("scheduler: ticket " + std::to_string(q.req.ticket) + " held twice");
        std::swap(held->second, q.kv);
      } else {
        kv_.free(q.kv);
      }
      finished_waiting |= q.status == SeqStatus::kPreempted;
      q.status = SeqStatus::kFinished;
      plan.finished.push_back(e.slot);
    }
  }
  if (!plan.finished.empty())
    std::erase_if(running_, [this](SlotId s) { return seqs_[s]->status == SeqStatus::kFinished; });
  if (finished_waiting)
    std::erase_if(waiting_, [this](SlotId s) { return seqs_[s]->status == SeqStatus::kFinished; });
  // Released at the next schedule() (it cleared the list).
  finished_pending_.insert(finished_pending_.end(), plan.finished.begin(), plan.finished.end());
}

}  // namespace prefixsim
