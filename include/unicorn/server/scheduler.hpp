// unicorn/server/scheduler.hpp — continuous batching: many requests share one
// engine's compiled streams (slots), step by step.
//
// One thread owns the engine and runs the loop (Scheduler::run); HTTP sessions
// on other threads submit Jobs and read their output. Each turn of the loop:
//   1. drops jobs whose client went away (their slots and queue places are
//      free at once);
//   2. gives waiting jobs free slots, preferring a slot whose KV cache already
//      holds a prefix of the job's prompt (then only the rest is prefilled);
//   3. collects the prefill pass in flight once it has finished (waiting for
//      it when no slot is generating, or when the decode steps PrefillOverlap
//      lets run beside it have run), and starts the next one over the
//      prompts still prefilling, oldest first: several new requests share one
//      pass over the weights, and a long prompt is fed one pass at a time;
//   4. runs one batched decode step: one token of every slot that is generating.
// A prefill pass runs on the engine's second queue while a decode step goes
// on beside it (EngineCore::begin_prefill); the next step waits for the pass
// (PrefillOverlap: one step, all steps, or none beside a pass). On a device
// with one queue each step waits for the pass before it.
// Jobs beyond the slots wait in a bounded queue; past it submit() refuses.
//
// A job with a grammar (structured output) has a matcher in its slot: before
// each of its tokens the matcher's allowed-token mask goes to the engine
// (EngineCore::constrain), and each chosen token advances it.
//
// With a draft model (set_draft), a slot generating alone - no other slot
// busy, none waiting, no prefill pass in flight - takes speculative rounds
// (generation/speculative.hpp): the draft guesses, one verify pass checks,
// and each kept token is delivered as a step's would be. They are the tokens
// the steps would give, so nothing else changes; whenever another job comes,
// batched steps take over (the batch wins: one pass serves every slot).
// Deterministic jobs under batch invariance, constrained and logprobs jobs
// take steps.
//
// Sampling parameters and seeds are per slot and applied on the GPU; a seed's
// draws depend only on the seed and the token's index in its completion
// (EngineCore::set_sampling), so a seeded request gives the same text whatever
// else shares its steps or whichever slot it lands in.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "unicorn/engine/core.hpp"
#include "unicorn/generation/image_prompt.hpp"
#include "unicorn/generation/speculative.hpp"
#include "unicorn/server/api.hpp"
#include "unicorn/server/job.hpp"
#include "unicorn/server/metrics.hpp"
#include "unicorn/server/serve.hpp"
#include "unicorn/text/text_stream.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::server {

// Whether a decode step may run while the prefill pass in flight is
// unfinished, `steps` having run beside it already.
constexpr bool step_beside_prefill(PrefillOverlap overlap, uint32_t steps) {
  return overlap == PrefillOverlap::AllSteps || (overlap == PrefillOverlap::OneStep && steps == 0);
}

struct SchedulerOptions {
  uint32_t slots = 1;         // streams used, at most the engine's streams
  uint32_t queue_limit = 64;  // jobs waiting for a slot before submit() refuses
  BatchInvariance batch_invariance = BatchInvariance::Deterministic;
  PrefillOverlap prefill_overlap = PrefillOverlap::OneStep;  // decode steps beside a prefill pass
};

class Scheduler {
 public:
  Scheduler(detail::EngineCore& engine, const text::Tokenizer& tok, SchedulerOptions opt, Metrics& metrics)
      : engine_(engine), tok_(tok), opt_(opt), metrics_(metrics), slots_(opt.slots), invariant_(opt.slots, 0),
        held_images_(opt.slots) {
    if (opt.slots == 0 || opt.slots > engine.streams())
      throw Error("server: " + std::to_string(opt.slots) + " slots asked; this engine has " +
                  std::to_string(engine.streams()) + " streams (EngineOptions::streams, at most the compiled STREAMS "
                  "of unicorn_add_server)");
    metrics_.slots(opt.slots);
    for (uint32_t s = 0; s < opt.slots; ++s) engine_.reset(s);
  }
  // The model's image encoder (AnyEngine::image_encoder), run on the
  // scheduler's thread, as every pass of the engine is; none: text only.
  void set_image_encoder(text::ImageEncoder encode) { encode_images_ = std::move(encode); }
  // A draft model (an engine of one stream over the same vocabulary, whose
  // passes also run on this thread) for slots generating alone; the engine
  // must have a verify pass (DeploymentConfig::draft_max).
  void set_draft(detail::EngineCore* draft) {
    if (draft && engine_.verify_rows() < 2)
      throw Error("server: a draft model needs an engine with a verify pass (DeploymentConfig::draft_max)");
    draft_ = draft;
  }

  // From any thread. Queues a job; false when the queue is full or the
  // scheduler is stopping (the caller answers 503).
  bool submit(std::shared_ptr<Job> job) { return submit(std::span(&job, 1)); }
  // Queues a request's jobs (its choices, the first leading) all or none.
  bool submit(std::span<const std::shared_ptr<Job>> jobs) {
    {
      std::lock_guard lock(m_);
      // A place held by a client that left is free: the loop's next turn ends its job.
      if (stopping_ || failed_ || waiting() + jobs.size() > opt_.queue_limit) return false;
      queue_.insert(queue_.end(), jobs.begin(), jobs.end());
      metrics_.gauges(waiting(), busy_);
    }
    cv_.notify_one();
    return true;
  }

  // From any thread: stop taking jobs. Queued jobs end with a 503 at once;
  // jobs in slots run to their end, or are cancelled with `cancel_running`.
  // run() returns once no job is left.
  void shutdown(bool cancel_running) {
    {
      std::lock_guard lock(m_);
      stopping_ = true;
      cancel_running_ = cancel_running_ || cancel_running;
    }
    cv_.notify_one();
  }
  // Whether submit() refuses everything now: the scheduler is stopping (the
  // caller answers 503 "shutting down" rather than "queue full").
  bool stopping() const {
    std::lock_guard lock(m_);
    return stopping_;
  }
  // The slots jobs run in (the most choices one request may ask for).
  uint32_t slots() const { return opt_.slots; }
  // Whether the engine failed (a step threw): the process should exit and be
  // restarted by its supervisor.
  bool failed() const {
    std::lock_guard lock(m_);
    return failed_;
  }
  // What failed, once failed().
  std::string failure() const {
    std::lock_guard lock(m_);
    return failure_;
  }

  // The engine's thread: steps until shutdown() and every job has ended.
  void run() {
    while (true) {
      std::vector<std::shared_ptr<Job>> admitted, refused, departed;
      bool cancel_all, done;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stopping_ || busy_ > 0 || (!queue_.empty() && busy_ < opt_.slots); });
        for (auto it = queue_.begin(); it != queue_.end();) {  // places held by clients that left
          if (!(*it)->cancelled) { ++it; continue; }
          departed.push_back(std::move(*it));
          it = queue_.erase(it);
        }
        if (stopping_) refused.assign(queue_.begin(), queue_.end()), queue_.clear();
        while (!queue_.empty() && busy_ + admitted.size() < opt_.slots && !awaits_leader(*queue_.front(), admitted)) {
          admitted.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        cancel_all = cancel_running_ || failed_;
        done = stopping_ && busy_ == 0 && admitted.empty();
      }
      // Jobs still queued when the scheduler stops are answered (503) even on
      // its last turn: a job taken by submit() always ends.
      for (auto& job : refused) finish_unstarted(*job, shutting_down());
      for (auto& job : departed) end_departed(*job);
      if (done) break;
      for (auto& job : admitted) place(std::move(job));
      if (cancel_all)
        for (Slot& s : slots_)
          if (s.job && !s.in_prefill) end(s, std::nullopt, shutting_down());  // in flight: once collected
      drop_cancelled();
      collect_prefill();
      start_prefill();
      if (opt_.prefill_overlap == PrefillOverlap::Off) collect_prefill();
      decode_step();
      publish_gauges();
    }
    publish_gauges();
  }

 private:
  // A slot: one compiled stream, and the job running on it (none: free; its
  // KV cache still holds the last job's tokens for the next prompt to reuse).
  struct Slot {
    std::shared_ptr<Job> job;
    bool generating = false;  // past the prompt: `next` is the token to feed
    bool in_prefill = false;  // a chunk of its prompt is in the prefill pass in flight
    bool scored = false;      // its prompt's log-probabilities are out (Job::score_prompt)
    size_t fed = 0;           // prompt tokens in the KV cache
    uint32_t cached = 0;      // of them, taken from the cache
    int32_t next = -1;
    uint32_t generated = 0;
    std::optional<text::TextStream> text;
    std::optional<grammar::Matcher> matcher;  // the job's grammar's state
    Clock::time_point last_token;
    uint64_t admitted_at = 0;  // admission order: the oldest prompt prefills first
    uint64_t used_at = 0;      // when its cache was last written: the least recent is reused first
    // Its job's images still to prefill, by stream position, and their soft tokens.
    std::vector<PromptImage> images;
    text::EncodedImages encoded;
    // Its job's speculative rounds (made at its first), while it generates alone.
    std::unique_ptr<text::detail::Speculator> speculator;
    // In a speculative round, the position the slot's cache rewinds to should
    // the job end at the token being delivered (the round fed tokens past it).
    std::optional<uint32_t> rewind_at_end;
  };

  // A later choice waits while its leader is queued or prefilling its prompt
  // (a turn or two: the leader is ahead of it in the queue); once the leader
  // has ended, or is generating, it goes.
  bool awaits_leader(const Job& job, const std::vector<std::shared_ptr<Job>>& admitted) const {
    if (!job.leader || job.cancelled) return false;
    if (std::ranges::any_of(admitted, [&](const auto& a) { return a == job.leader; })) return true;
    for (const Slot& s : slots_)
      if (s.job == job.leader) return !s.generating;
    return std::ranges::any_of(queue_, [&](const auto& q) { return q == job.leader; });
  }

  // A later choice's start: the leader's prompt (but its last token) copied
  // into `stream` from the leader's slot; how many tokens that gave (0: the
  // leader's slot no longer holds them, and the prompt is prefilled anew).
  uint32_t copy_from_leader(const Job& job, uint32_t stream) {
    if (!job.leader || job.prompt.empty()) return 0;
    const uint32_t n = uint32_t(job.prompt.size() - 1);
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].job != job.leader || slots_[s].in_prefill) continue;
      const auto held = engine_.tokens(uint32_t(s));
      if (held.size() < n || !std::equal(held.begin(), held.begin() + n, job.prompt.begin()) ||
          !engine_.can_rewind(uint32_t(s), n))
        return 0;
      engine_.copy_prefix(uint32_t(s), stream, n);
      invariant_[stream] = std::min(invariant_[s], n);
      return n;
    }
    return 0;
  }

  // Gives a job the free slot whose cache shares the longest usable prefix
  // with its prompt, else the least recently used one.
  void place(std::shared_ptr<Job> job) {
    size_t best = slots_.size();
    uint32_t best_reuse = 0;
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].job) continue;
      const uint32_t reuse = job->cache_prompt && !job->score_prompt ? reusable_prefix(uint32_t(s), *job) : 0;
      if (best == slots_.size() || reuse > best_reuse ||
          (reuse == best_reuse && slots_[s].used_at < slots_[best].used_at)) {
        best = s;
        best_reuse = reuse;
      }
    }
    Slot& slot = slots_[best];
    const uint32_t stream = uint32_t(best);
    std::optional<grammar::Matcher> matcher;
    std::vector<PromptImage> images;
    text::EncodedImages encoded;
    uint32_t copied = 0;
    try {
      copied = copy_from_leader(*job, stream);
      if (copied) best_reuse = copied;
      else engine_.rewind(stream, best_reuse), invariant_[stream] = std::min(invariant_[stream], best_reuse);
      encode_images(*job, best_reuse, images, encoded);
      held_images_[stream].clear();
      for (const Job::Image& im : job->images) held_images_[stream].push_back(im);
      engine_.set_sampling(stream, job->sampling);  // lifts the last job's mask
      if (job->grammar) {
        matcher.emplace(job->grammar, vocabulary());
        constrain(stream, *matcher);
      }
    } catch (const std::exception& e) {  // checked by the session; an engine that refuses is a bug
      return finish_unstarted(*job, {500, std::string("server: ") + e.what(), "server_error", "", ""});
    }
    slot = Slot{};
    slot.images = std::move(images);
    slot.encoded = std::move(encoded);
    slot.matcher = std::move(matcher);
    slot.job = std::move(job);
    slot.fed = best_reuse;
    slot.cached = copied ? 0 : best_reuse;  // a copied prompt is the leader's, counted once
    slot.text.emplace(tok_, slot.job->stop);
    slot.admitted_at = ++clock_;
    slot.used_at = clock_;
    std::lock_guard lock(m_);
    busy_++;
  }

  // The longest prefix of the job's prompt the stream holds and can go back
  // to, leaving at least the prompt's last token to prefill (its logits choose
  // the first new token). A deterministic job under BatchInvariance::
  // Deterministic takes only what prefill and batch-invariant steps wrote: an
  // unseeded answer decoded on the fastest kernels may hold other values than
  // the job would compute itself, and its text must not depend on that.
  uint32_t reusable_prefix(uint32_t stream, const Job& job) const {
    const auto held = engine_.tokens(stream);
    const std::vector<int32_t>& prompt = job.prompt;
    if (prompt.empty()) return 0;
    size_t limit = std::min(held.size(), prompt.size() - 1);
    if (job.deterministic && opt_.batch_invariance == BatchInvariance::Deterministic)
      limit = std::min<size_t>(limit, invariant_[stream]);
    uint32_t n = 0;
    while (n < limit && held[n] == prompt[n]) ++n;
    // Image rows all hold one placeholder id: equal ids are the same image
    // only where the cache holds the same file there. The prefix ends at the
    // first image that differs (or that it would cut): that one is fed whole.
    const uint32_t rows = encoded_rows();
    const auto same_file = [&](const Job::Image& a, const std::vector<Job::Image>& in) {
      return std::ranges::any_of(in, [&](const Job::Image& b) { return b.pos == a.pos && *b.file == *a.file; });
    };
    for (const Job::Image& im : job.images)
      if (im.pos < n && (n < im.pos + rows || !same_file(im, held_images_[stream]))) n = std::min(n, im.pos);
    for (const Job::Image& im : held_images_[stream])
      if (im.pos < n && !same_file(im, job.images)) n = std::min(n, im.pos);
    return engine_.can_rewind(stream, n) ? n : 0;
  }

  // Soft tokens per image of this engine (0: it reads no images).
  uint32_t encoded_rows() const { return engine_.config().vision.tokens_per_image; }

  // Encodes the job's images that lie past the `fed` prompt tokens the slot
  // keeps, and places them by stream position (positions are prompt indices:
  // the slot's stream holds the prompt from 0).
  void encode_images(const Job& job, uint32_t fed, std::vector<PromptImage>& images, text::EncodedImages& encoded) {
    std::vector<std::string> files;
    std::vector<uint32_t> at;
    for (const Job::Image& im : job.images)
      if (im.pos >= fed) files.push_back(*im.file), at.push_back(im.pos);
    if (files.empty()) return;
    if (!encode_images_) throw Error("images: this server's model has no image encoder");
    encoded = encode_images_(files);
    for (size_t i = 0; i < files.size(); ++i)
      images.push_back({at[i], encoded.rows, &(*encoded.soft_tokens)[0], i * encoded.image_bytes});
  }

  void drop_cancelled() {
    for (Slot& s : slots_)
      if (s.job && s.job->cancelled && !s.in_prefill)
        end(s, std::nullopt, cancelled());
  }

  // Starts one prefill pass: the prompts still prefilling, oldest first, each
  // with what is left of it up to the rows the pass has left (EngineCore::
  // begin_prefill of several streams' chunks). A prompt's last chunk chooses
  // its completion's first token (collect_prefill).
  void start_prefill() {
    if (engine_.prefill_in_flight()) return;
    for (Slot& s : slots_)
      if (s.job && !s.generating && s.job->score_prompt && !s.scored) score_prompt(s);
    std::vector<Slot*> waiting;
    for (Slot& s : slots_)
      if (s.job && !s.generating) waiting.push_back(&s);
    if (waiting.empty()) return;
    std::ranges::sort(waiting, {}, [](const Slot* s) { return s->admitted_at; });
    std::vector<PromptChunk> rest;  // each waiting prompt's tokens still to feed
    for (const Slot* s : waiting)
      rest.push_back({stream_of(*s), std::span(s->job->prompt).subspan(s->fed), true, s->images});
    const std::vector<PromptChunk> chunks = engine_.prefill_pass(rest);
    const std::vector<Slot*> who(waiting.begin(), waiting.begin() + ptrdiff_t(chunks.size()));
    try {
      engine_.begin_prefill(chunks);
    } catch (const std::exception& e) {
      return engine_failed(std::string("prefill: ") + e.what(), who);
    }
    in_flight_.clear();
    steps_beside_pass_ = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      in_flight_.push_back({who[i], uint32_t(chunks[i].tokens.size()), chunks[i].ends_prompt});
      who[i]->in_prefill = true;
    }
  }

  // A prompt whose own log-probabilities are asked for: scored in one go (its
  // tokens but the last fed, each one's log-probability read back), before
  // the last token's prefill chooses the first new one.
  void score_prompt(Slot& s) {
    const uint32_t stream = stream_of(s);
    const std::vector<int32_t>& prompt = s.job->prompt;
    std::vector<TokenLogprobs> scored;
    try {
      scored = engine_.score(stream, prompt, s.job->sampling.top_logprobs);
      engine_failures_ = 0;
    } catch (const std::exception& e) {
      return engine_failed(std::string("score: ") + e.what(), {&s});
    }
    invariant_[stream] = 0;  // written by another pass than the prefill's: no deterministic job reuses it
    s.job->add_logprobs({prompt[0], {}, false});
    for (size_t i = 0; i < scored.size(); ++i) s.job->add_logprobs({prompt[i + 1], std::move(scored[i])});
    s.fed = prompt.size() - 1;
    s.scored = true;
    if (s.job->max_tokens == 0) end(s, FinishReason::Length, std::nullopt);
  }

  // The prefill pass in flight, once it has finished; waits for it when no
  // slot is generating (nothing else would run meanwhile) or when the steps
  // that PrefillOverlap lets run beside it have run.
  void collect_prefill() {
    if (!engine_.prefill_in_flight()) return;
    const bool decoding = std::ranges::any_of(slots_, [](const Slot& s) { return s.job && s.generating; });
    std::vector<int32_t> first;
    std::vector<Slot*> who;
    for (const InFlightChunk& c : in_flight_) who.push_back(c.slot);
    try {
      if (decoding && step_beside_prefill(opt_.prefill_overlap, steps_beside_pass_) && !engine_.prefill_ready())
        return;
      first = engine_.finish_prefill();
      engine_failures_ = 0;
    } catch (const std::exception& e) {
      for (Slot* s : who) s->in_prefill = false;
      in_flight_.clear();
      return engine_failed(std::string("prefill: ") + e.what(), who);
    }
    std::vector<uint32_t> tokens;
    for (const InFlightChunk& c : in_flight_) tokens.push_back(c.tokens);
    metrics_.prefill_pass(tokens);
    for (size_t i = 0; i < in_flight_.size(); ++i) {
      Slot& s = *in_flight_[i].slot;
      const uint32_t stream = stream_of(s), n = in_flight_[i].tokens;
      s.in_prefill = false;
      // A prefill row's values do not depend on what else shares its pass:
      // the chunk extends the invariant part of the cache if that reaches up to it.
      if (invariant_[stream] == s.fed) invariant_[stream] += n;
      s.fed += n;
      if (!in_flight_[i].ends_prompt) continue;
      metrics_.time_to_first_token(seconds(Clock::now() - s.job->arrived));
      s.job->mark_first_token();
      s.generating = true;
      s.used_at = ++clock_;
      deliver(s, stream, first[i]);
    }
    in_flight_.clear();
  }
  uint32_t stream_of(const Slot& s) const { return uint32_t(&s - slots_.data()); }

  // One token of every generating slot, in one pass over the weights.
  void decode_step() {
    std::vector<StreamToken> batch;
    std::vector<Slot*> who;
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].job && slots_[i].generating) {
        batch.push_back({uint32_t(i), slots_[i].next});
        who.push_back(&slots_[i]);
      }
    if (batch.empty()) return;
    const bool fixed = opt_.batch_invariance == BatchInvariance::Always ||
                       (opt_.batch_invariance == BatchInvariance::Deterministic &&
                        std::ranges::any_of(who, [](const Slot* s) { return s->job->deterministic; }));
    if (!fixed && who.size() == 1 && speculative_round(*who[0])) return;
    engine_.set_batch_passes(fixed ? detail::EngineCore::BatchPasses::Fixed : detail::EngineCore::BatchPasses::BySize);
    std::vector<uint32_t> positions;  // where each row's token goes in its cache
    for (const StreamToken& t : batch) positions.push_back(uint32_t(engine_.tokens(t.stream).size()));
    std::vector<int32_t> next;
    try {
      next = engine_.decode(batch);
      engine_failures_ = 0;
    } catch (const std::exception& e) {
      return engine_failed(std::string("decode: ") + e.what(), who);
    }
    metrics_.decode_step(uint32_t(batch.size()), engine_.prefill_in_flight());
    if (engine_.prefill_in_flight()) steps_beside_pass_++;
    for (size_t i = 0; i < batch.size(); ++i)
      if (fixed && invariant_[batch[i].stream] == positions[i]) invariant_[batch[i].stream]++;
    const auto now = Clock::now();
    for (size_t i = 0; i < batch.size(); ++i) {
      Slot& s = *who[i];
      metrics_.inter_token(seconds(now - s.last_token));
      s.used_at = ++clock_;
      deliver(s, batch[i].stream, next[i]);
    }
  }

  // A round of speculative decoding for `s`, the only job (see the first
  // comment); false where it takes a step instead.
  bool speculative_round(Slot& s) {
    {
      std::lock_guard lock(m_);
      if (!draft_ || busy_ != 1 || !queue_.empty()) return false;
    }
    if (engine_.prefill_in_flight() || s.matcher || s.job->sampling.logprobs) return false;
    const uint32_t stream = stream_of(s), q = engine_.position(stream);
    std::vector<int32_t> tokens;
    try {
      if (!s.speculator)
        s.speculator = std::make_unique<text::detail::Speculator>(engine_, stream, *draft_, engine_.config().draft_max, 0);
      const text::detail::DraftStats before = s.speculator->stats();
      tokens = s.speculator->next(s.next);
      const text::detail::DraftStats& after = s.speculator->stats();
      if (after.verify_passes > before.verify_passes)
        metrics_.speculative_round(uint32_t(after.drafted - before.drafted), uint32_t(after.accepted - before.accepted));
      else
        metrics_.decode_step(1, false);  // no room for guesses: a step
      engine_failures_ = 0;
    } catch (const std::exception& e) {
      engine_failed(std::string("speculative decoding: ") + e.what(), {&s});
      return true;
    }
    const auto now = Clock::now();
    for (size_t i = 0; i < tokens.size(); ++i) {
      metrics_.inter_token(seconds(now - s.last_token) / double(tokens.size()));
      s.used_at = ++clock_;
      // Should it end at tokens[i] (never fed), the tokens fed after it go, in
      // end(): before the end is published, so that the cache is then as the
      // steps would have left it.
      s.rewind_at_end = q + 1 + uint32_t(i);
      deliver(s, stream, tokens[i]);
      if (!s.job) break;
    }
    s.rewind_at_end.reset();
    return true;
  }

  // The grammar's vocabulary, made once (its byte trie of the whole
  // vocabulary) at the first job with a grammar.
  std::shared_ptr<const grammar::Vocabulary> vocabulary() {
    if (!vocabulary_) vocabulary_ = grammar::Vocabulary::from_tokenizer(tok_);
    return vocabulary_;
  }
  // The tokens the slot's grammar allows next, for the stream's next choice.
  void constrain(uint32_t stream, const grammar::Matcher& matcher) {
    mask_.assign(engine_.mask_words(), 0);
    matcher.allowed_tokens(mask_);
    engine_.constrain(stream, mask_);
  }

  // A chosen token: the end of the completion, or text and the next step's input.
  void deliver(Slot& s, uint32_t stream, int32_t token) {
    s.last_token = Clock::now();
    if (!s.job->ignore_eos && (token == tok_.eos_id() || token == tok_.end_of_turn_id()))
      return end(s, FinishReason::Stop, std::nullopt);
    if (s.matcher && !s.matcher->accept(token))  // the mask allowed it: a bug, not the client's
      return end(s, std::nullopt, ApiError{500, "server: token " + std::to_string(token) +
                                                    " was chosen but the request's grammar does not allow it",
                                           "server_error", "", "grammar_error"});
    s.generated++;
    // Read now: the lane's next pass writes over them (before the text, whose
    // append wakes the session).
    if (s.job->sampling.logprobs) s.job->add_logprobs({token, engine_.logprobs(stream)});
    s.job->append(s.text->push(token));
    if (s.text->stopped()) return end(s, FinishReason::Stop, std::nullopt);
    // The context holds the prompt and every generated token but the last
    // (which is never fed): prompt + completion tokens <= the context.
    if (s.generated >= s.job->max_tokens || engine_.position(stream) + 1 >= engine_.context_limit())
      return end(s, FinishReason::Length, std::nullopt);
    if (s.matcher) {
      if (s.matcher->exhausted()) return end(s, FinishReason::Stop, std::nullopt);  // the grammar says no more
      try {
        constrain(stream, *s.matcher);
      } catch (const std::exception& e) {
        return end(s, std::nullopt, ApiError{500, std::string("server: ") + e.what(), "server_error", "", "grammar_error"});
      }
    }
    s.next = token;
  }

  void end(Slot& s, std::optional<FinishReason> finish, std::optional<ApiError> error) {
    if (s.rewind_at_end) {  // a speculative round fed tokens past this end
      const uint32_t stream = stream_of(s);
      if (engine_.position(stream) > *s.rewind_at_end) engine_.rewind(stream, *s.rewind_at_end);
      s.rewind_at_end.reset();
    }
    if (finish) s.job->append(s.text->finish());
    const Usage usage{uint32_t(s.job->prompt.size()), s.cached, s.generated};
    const std::string outcome = finish ? finish_name(*finish) : error->status == 499 ? "cancelled" : "error";
    metrics_.completion(usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens, outcome);
    {  // the slot is free in /metrics before the client can see its answer end
      std::lock_guard lock(m_);
      busy_--;
      metrics_.gauges(waiting(), busy_);
    }
    s.job->end(finish, std::move(error), usage);
    s.job.reset();
    s.generating = false;
    s.speculator.reset();
  }

  // A queued job whose client went away: ended as a running one would be.
  void end_departed(Job& job) {
    const Usage usage{uint32_t(job.prompt.size()), 0, 0};
    metrics_.completion(usage.prompt_tokens, 0, 0, "cancelled");
    job.end(std::nullopt, cancelled(), usage);
  }
  static ApiError cancelled() { return {499, "the request was cancelled", "cancelled", "", "cancelled"}; }

  void finish_unstarted(Job& job, ApiError error) {
    metrics_.rejected(error.code.empty() ? "error" : error.code);
    job.end(std::nullopt, std::move(error), Usage{uint32_t(job.prompt.size()), 0, 0});
  }

  // A step threw (a device fault, a NaN from a broken weights file): its jobs
  // end with a 500 naming it. A lost device, or three failed steps in a row,
  // mean the device is gone: every job ends and the scheduler stops, for a
  // supervisor to restart the process.
  void engine_failed(const std::string& what, const std::vector<Slot*>& involved) {
    for (Slot* s : involved) {
      const uint32_t stream = uint32_t(s - slots_.data());
      end(*s, std::nullopt, ApiError{500, "engine: " + what, "server_error", "", "engine_error"});
      engine_.reset(stream);  // its cache may be half written
    }
    if (++engine_failures_ < 3 && !engine_.context().device_lost()) return;
    if (engine_.prefill_in_flight()) {  // its jobs end below with the others
      try {
        engine_.finish_prefill();
      } catch (const std::exception&) {
      }
      for (const InFlightChunk& c : in_flight_) c.slot->in_prefill = false;
      in_flight_.clear();
    }
    for (Slot& s : slots_)
      if (s.job) end(s, std::nullopt, ApiError{500, "engine: " + what, "server_error", "", "engine_error"});
    std::lock_guard lock(m_);
    failed_ = stopping_ = cancel_running_ = true;
    failure_ = what;
  }

  static ApiError shutting_down() {
    return {503, "the server is shutting down", "unavailable_error", "", "shutting_down"};
  }

  void publish_gauges() {
    std::lock_guard lock(m_);
    metrics_.gauges(waiting(), busy_);
  }
  // Queued jobs whose clients are still there (m_ held).
  uint32_t waiting() const {
    return uint32_t(std::ranges::count_if(queue_, [](const auto& job) { return !job->cancelled; }));
  }

  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

  detail::EngineCore& engine_;
  const text::Tokenizer& tok_;
  SchedulerOptions opt_;
  Metrics& metrics_;
  std::vector<Slot> slots_;  // the engine's thread only
  // The prefill pass in flight: each chunk's slot, its tokens, whether it ends the prompt.
  struct InFlightChunk {
    Slot* slot;
    uint32_t tokens;
    bool ends_prompt;
  };
  std::vector<InFlightChunk> in_flight_;
  uint32_t steps_beside_pass_ = 0;  // decode steps run since the pass in flight began
  // Per stream: how many tokens at the start of its cache were written by
  // prefill or by batch-invariant decode steps (what a deterministic job may reuse).
  std::vector<uint32_t> invariant_;
  // Per slot: the images its stream's cache holds (the last job's), by position.
  std::vector<std::vector<Job::Image>> held_images_;
  text::ImageEncoder encode_images_;
  detail::EngineCore* draft_ = nullptr;  // set_draft
  std::shared_ptr<const grammar::Vocabulary> vocabulary_;  // vocabulary(): made at the first grammar
  std::vector<uint32_t> mask_;                               // constrain()'s words
  uint64_t clock_ = 0;       // a logical clock for admission order and cache age
  uint32_t engine_failures_ = 0;

  mutable std::mutex m_;  // guards what follows
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  uint32_t busy_ = 0;  // slots with a job
  bool stopping_ = false, cancel_running_ = false, failed_ = false;
  std::string failure_;
};

}  // namespace unicorn::server
