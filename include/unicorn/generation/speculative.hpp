// unicorn/generation/speculative.hpp — speculative decoding: a small draft
// engine guesses a target engine's next tokens, the target checks them all in
// one verify pass (EngineCore::verify: every weight read once) and keeps the
// guesses it would have chosen itself, then adds its own next choice.
//
// The text is the target's, token for token: the draft samples with the
// target's parameters and the target's draws (the sampler's random numbers
// are counted per position, EngineCore::draws), and a guess is kept only
// where the target, choosing after the same tokens with the same draw, chose
// it. Greedy or sampled, with any bias, penalty or filter, a seed gives the
// tokens it gives without a draft (docs/speculative.md).
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/engine/core.hpp"

namespace unicorn::text::detail {

// What the draft did in one generation.
struct DraftStats {
  int drafted = 0;        // tokens the draft guessed
  int accepted = 0;       // of them, those the target kept
  int verify_passes = 0;  // the target's passes (each gave accepted + 1 tokens)
};

class Speculator {
 public:
  // `draft`'s stream 0 follows `stream` of `target` (their vocabularies are
  // one: the pair's compile-time check). Each round drafts `max_tokens`
  // (at most target.verify_rows() - 1); with 0 < min_tokens < max_tokens
  // the count adapts between the two to the run of guesses last kept.
  Speculator(unicorn::detail::EngineCore& target, uint32_t stream, unicorn::detail::EngineCore& draft,
             uint32_t max_tokens, uint32_t min_tokens)
      : target_(target), draft_(draft), stream_(stream),
        max_(std::min(max_tokens, target.verify_rows() ? target.verify_rows() - 1 : 0)),
        min_(min_tokens == 0 ? max_ : std::clamp(min_tokens, 1u, std::max(max_, 1u))), k_(max_) {
    if (max_ == 0) throw Error("speculative decoding: the target engine has no verify pass (DeploymentConfig::draft_max)");
    if (draft.config().model.vocab != target.config().model.vocab)
      throw Error("speculative decoding: the draft's vocabulary has " + std::to_string(draft.config().model.vocab) +
                  " tokens, the target's " + std::to_string(target.config().model.vocab));
  }

  // `last`: the target's latest choice on its stream, not fed yet. Returns
  // the tokens the target produces after it: the guesses it kept, then its
  // own choice (at least one token). The target's stream then holds `last`
  // and every returned token but the final one, which is not fed.
  std::vector<int32_t> next(int32_t last) {
    const uint32_t q = target_.position(stream_);
    // Guesses that leave both contexts two positions to spare past the verify
    // pass's rows (last and the guesses), so that no guess is fed where a
    // step would have found the context full.
    const auto room = [q](const unicorn::detail::EngineCore& e) {
      return e.context_limit() > q + 3 ? e.context_limit() - q - 3 : 0u;
    };
    const uint32_t k = std::min({k_, room(target_), room(draft_)});
    if (k == 0) return {decode_target(last)};

    follow_target();
    if (draft_.sampling(0) != target_.sampling(stream_)) draft_.set_sampling(0, target_.sampling(stream_));
    draft_.set_draws(0, target_.draws(stream_));
    std::vector<int32_t> rows{last};
    for (uint32_t i = 0; i < k; ++i) rows.push_back(draft_.decode(rows.back()));

    const std::vector<int32_t> chosen = target_.verify(stream_, rows);
    uint32_t kept = 0;
    while (kept < k && chosen[kept] == rows[kept + 1]) ++kept;
    target_.rewind(stream_, q + kept + 1);  // last and the kept guesses stay
    stats_.drafted += int(k);
    stats_.accepted += int(kept);
    stats_.verify_passes += 1;
    if (min_ < max_) k_ = kept == k ? std::min(max_, k + 2) : std::clamp(kept + 1, min_, max_);
    return {chosen.begin(), chosen.begin() + kept + 1};
  }

  const DraftStats& stats() const { return stats_; }

 private:
  // The draft's stream holds the target's tokens: it goes back to the longest
  // prefix they share and is fed the rest (the prompt, a new turn, the
  // target's last choices).
  void follow_target() {
    const std::span<const int32_t> want = target_.tokens(stream_), have = draft_.tokens(0);
    size_t common = size_t(std::ranges::mismatch(want, have).in1 - want.begin());
    if (common < have.size()) {
      if (draft_.can_rewind(0, uint32_t(common))) {
        draft_.rewind(0, uint32_t(common));
      } else {
        draft_.reset(0);
        common = 0;
      }
    }
    if (common < want.size()) draft_.feed(0, want.subspan(common));
  }

  int32_t decode_target(int32_t token) {
    if (stream_ == 0) return target_.decode(token);
    const StreamToken row[] = {{stream_, token}};
    return target_.decode(row)[0];
  }

  unicorn::detail::EngineCore& target_;
  unicorn::detail::EngineCore& draft_;
  uint32_t stream_;
  uint32_t max_, min_, k_;  // guesses a round: the bounds, and the next round's
  DraftStats stats_;
};

}  // namespace unicorn::text::detail
