// unicorn/server/job.hpp — one completion in flight (Job): the request as
// the scheduler runs it, and the output it has produced, which the HTTP
// session that submitted it takes as it comes (server/scheduler.hpp runs it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "unicorn/config/sampling.hpp"
#include "unicorn/grammar/grammar.hpp"
#include "unicorn/server/request.hpp"
#include "unicorn/server/responses.hpp"

namespace unicorn::server {

using Clock = std::chrono::steady_clock;

// One completion in flight, shared by the HTTP session that submitted it and
// the scheduler that runs it.
class Job {
 public:
  // The request, fixed before submit().
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  uint32_t max_tokens = UINT32_MAX;  // generated tokens at most (the context also ends it)
  std::vector<std::string> stop;
  bool cache_prompt = true;
  bool ignore_eos = false;  // <eos> and <end_of_turn> are text like any other token
  // Structured output: every token is chosen among those the grammar allows
  // next (a mask computed on this thread, applied on the GPU), and the answer
  // ends when the grammar is complete and the model ends it, or nothing but
  // an end can follow. None: free text.
  std::shared_ptr<const grammar::Grammar> grammar;
  // One of several choices of one request (the API's n), after the first:
  // the first choice's job. It waits until the leader's slot holds the prompt
  // (but its last token), then starts from a device copy of those keys and
  // values (EngineCore::copy_prefix), so the prompt is prefilled once.
  std::shared_ptr<Job> leader;
  // The prompt's own log-probabilities go out first (echo with logprobs):
  // EngineCore::score feeds it; max_tokens may then be 0.
  bool score_prompt = false;
  // Its text is a function of the request alone (a seed given, or greedy):
  // the steps it shares run batch-invariant kernels (SchedulerOptions).
  bool deterministic = false;
  // The prompt's images (chat image parts): where each one's soft tokens go
  // (its first row's index in `prompt`, whose rows there hold a placeholder
  // id) and its file. The scheduler encodes an image when the job takes a
  // slot, unless the slot's cache holds the same file at the same place.
  struct Image {
    uint32_t pos;
    std::shared_ptr<const std::string> file;
  };
  std::vector<Image> images;
  Clock::time_point arrived = Clock::now();

  // Set by the session when its client goes away: the job leaves its slot at
  // the scheduler's next step.
  std::atomic<bool> cancelled{false};
  // Called on the scheduler's thread after new output and at the end; it
  // should only wake the session (which then calls take()).
  std::function<void()> notify;

  // What the scheduler has produced since the last take().
  struct Progress {
    std::string text;
    std::vector<TokenLogprobEntry> logprobs;  // of the tokens chosen since (sampling.logprobs)
    bool ended = false;
    std::optional<FinishReason> finish;  // ended normally
    std::optional<ApiError> error;       // ended by a failure (or the server stopping)
    Usage usage;
    // When its prompt was in and its first token chosen, and when it ended
    // (Ollama's API reports the durations).
    std::optional<Clock::time_point> first_token;
    Clock::time_point ended_at;
  };
  Progress take() {
    std::lock_guard lock(m_);
    Progress p = out_;  // the end, once set, stays for later takes
    out_.text.clear();
    out_.logprobs.clear();
    return p;
  }

  // --- the scheduler's side ---
  void append(const std::string& text) {
    if (text.empty()) return;
    {
      std::lock_guard lock(m_);
      out_.text += text;
    }
    wake();
  }
  void mark_first_token() {
    std::lock_guard lock(m_);
    out_.first_token = Clock::now();
  }
  void add_logprobs(TokenLogprobEntry entry) {
    std::lock_guard lock(m_);
    out_.logprobs.push_back(std::move(entry));
  }
  void end(std::optional<FinishReason> finish, std::optional<ApiError> error, const Usage& usage) {
    {
      std::lock_guard lock(m_);
      out_.ended = true;
      out_.ended_at = Clock::now();
      out_.finish = finish;
      out_.error = std::move(error);
      out_.usage = usage;
    }
    wake();
  }

 private:
  void wake() {
    if (notify) notify();
  }
  std::mutex m_;
  Progress out_;
};

}  // namespace unicorn::server
