// unicorn/engine/teacher_forcing.hpp — EngineCore's logits of given tokens:
// teacher forcing through each recorded pass (forward_logits), and a stream's
// tokens scored with their log-probabilities (score).
#pragma once

#include "unicorn/engine/core.hpp"

namespace unicorn::detail {

UNICORN_DECL std::vector<float> EngineCore::forward_logits(std::span<const int32_t> tokens, Pass pass) {
  check_tokens(0, tokens);
  const RawLogits raw(*this);
  const uint32_t V = cfg_.model.vocab;
  std::vector<float> out(tokens.size() * size_t(V));
  // The pass with a row of logits for every token of a chunk, recorded on first
  // use by a prefill (recorded by a decode's call, it had one row of logits).
  const uint32_t all_rows = std::min(cfg_.prefill_chunk, layout_.logit_rows);
  if (pass == Pass::Verify && !verify_)
    throw Error("forward_logits: this engine has no verify pass (its deployment drafts nothing)");
  const uint32_t chunk = pass == Pass::Decode ? 1 : pass == Pass::Verify ? verify_rows() : all_rows;
  if (pass == Pass::Prefill && !prefill_all_logits_)
    prefill_all_logits_ = record_forward(cfg_.prefill_chunk, all_rows, PassKind::Prefill);
  for (size_t done = 0; done < tokens.size(); done += chunk) {
    const uint32_t n = uint32_t(std::min<size_t>(chunk, tokens.size() - done));
    if (pass == Pass::Decode) decode(tokens[done]);
    else if (pass == Pass::Verify) (void)verify(0, tokens.subspan(done, n));
    else run_chunk(*prefill_all_logits_, 0, tokens.subspan(done, n));
    Lane& lane = pass == Pass::Decode   ? *decode_->lane
                 : pass == Pass::Verify ? *verify_->lane
                                        : *prefill_all_logits_->lane;
    read_logits(lane, n, out.data() + done * V);
  }
  return out;
}

UNICORN_DECL std::vector<float> EngineCore::forward_logits(std::span<const int32_t> tokens,
                                                          std::span<const PromptImage> images) {
  check_tokens(0, tokens);
  const RawLogits raw(*this);
  const uint32_t V = cfg_.model.vocab;
  std::vector<float> out(tokens.size() * size_t(V));
  const uint32_t all_rows = std::min(cfg_.prefill_chunk, layout_.logit_rows);
  check_images_fit(position(0), tokens.size(), all_rows, images, "forward_logits");
  if (!prefill_all_logits_) prefill_all_logits_ = record_forward(cfg_.prefill_chunk, all_rows, PassKind::Prefill);
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = chunk_tokens(position(0), tokens.size() - done, all_rows, images);
    run_chunk(*prefill_all_logits_, 0, tokens.subspan(done, n), images);
    read_logits(*prefill_all_logits_->lane, uint32_t(n), out.data() + done * V);
    done += n;
  }
  return out;
}

UNICORN_DECL std::vector<TokenLogprobs> EngineCore::score(uint32_t stream, std::span<const int32_t> tokens,
                                                          uint32_t top) {
  if (top > kMaxTopLogprobs)
    throw Error("score: " + std::to_string(top) + " alternatives asked; at most " + std::to_string(kMaxTopLogprobs));
  if (tokens.size() < 2) return {};
  const std::span<const int32_t> fed = tokens.first(tokens.size() - 1);
  check_tokens(stream, tokens);
  if (prefill_in_flight()) throw Error("score: a prefill pass is in flight");
  check_not_in_flight(stream, "score");
  const RawLogits raw(*this);
  const uint32_t all_rows = std::min(cfg_.prefill_chunk, layout_.logit_rows);
  if (!prefill_all_logits_) prefill_all_logits_ = record_forward(cfg_.prefill_chunk, all_rows, PassKind::Prefill);
  const Graph& graph = *prefill_all_logits_;
  Lane& lane = *graph.lane;
  StreamState& s = streams_[stream];
  const uint32_t counter = s.counter;  // scoring chooses nothing: the draws go on where they were
  std::vector<TokenLogprobs> out;
  for (size_t done = 0; done < fed.size(); done += all_rows) {
    const auto chunk = fed.subspan(done, std::min<size_t>(all_rows, fed.size() - done));
    const uint32_t n = uint32_t(chunk.size());
    write_step(lane, chunk_rows(stream, chunk, 0, n), n);
    s.tokens.insert(s.tokens.end(), chunk.begin(), chunk.end());
    note_written(s);
    for (uint32_t row = 0; row < n; ++row) {  // row i's logits predict the token after it
      write_sampler(lane, row, stream);
      SamplerState st;
      std::byte* at = lane.sampler_rows().mapped + row * kSamplerRowBytes;
      std::memcpy(&st, at, sizeof st);
      st.logprobs = 1 + top;
      st.target = uint32_t(tokens[done + row + 1]);
      std::memcpy(at, &st, sizeof st);
    }
    submit(graph, s.tokens.size() - n, stream);
    for (uint32_t row = 0; row < n; ++row) out.push_back(read_logprobs(lane, row));
  }
  s.counter = counter;
  s.sampled = {};
  return out;
}

UNICORN_DECL std::vector<float> EngineCore::forward_logits(std::span<const StreamToken> batch) {
  const RawLogits raw(*this);
  decode(batch);
  std::vector<float> out(batch.size() * size_t(cfg_.model.vocab));
  read_logits(decode_lane(), uint32_t(batch.size()), out.data());
  return out;
}

UNICORN_DECL std::vector<float> EngineCore::forward_logits(std::span<const PromptChunk> chunks) {
  const RawLogits raw(*this);
  prefill(chunks);
  const auto ends = uint32_t(std::ranges::count_if(chunks, [](const PromptChunk& c) { return c.ends_prompt; }));
  std::vector<float> out(size_t(ends) * cfg_.model.vocab);
  read_logits(*prefill_lane_, ends, out.data());
  return out;
}

}  // namespace unicorn::detail
