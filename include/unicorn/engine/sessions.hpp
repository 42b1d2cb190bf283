// unicorn/engine/sessions.hpp — EngineCore's streams: what each holds (its
// tokens, sampling, draw counter, ring), prefill and decode of one or several
// streams, rewind, sampling parameters, and the host side of each submission
// (the step rows and sampler rows it writes, the tokens it reads). Teacher
// forcing and scoring are in engine/teacher_forcing.hpp.
#pragma once

#include "unicorn/engine/core.hpp"

namespace unicorn::detail {

UNICORN_DECL void EngineCore::reset() {
  if (prefill_in_flight()) throw Error("reset: a prefill pass is in flight");
  for (uint32_t s = 0; s < cfg_.streams; ++s) reset(s);
}

UNICORN_DECL void EngineCore::reset(uint32_t stream) {
  check_not_in_flight(stream, "reset");
  StreamState& s = stream_state(stream);
  s.tokens.clear();
  s.counter = 0;
  s.ring_from = 0;
  s.sampled = {};
}

UNICORN_DECL bool EngineCore::can_rewind(uint32_t stream, uint32_t pos) const {
  const StreamState& s = stream_state(stream);
  if (pos == 0) return true;
  if (pos > s.tokens.size()) return false;
  if (layout_.local_kv_slots >= kv_context_) return true;  // no ring: nothing is overwritten
  const uint32_t window = cfg_.model.sliding_window;
  const uint32_t oldest_seen = pos >= window ? pos - window + 1 : 0;  // the key furthest back a token at pos sees
  return oldest_seen >= s.ring_from;
}

UNICORN_DECL void EngineCore::rewind(uint32_t stream, uint32_t pos) {
  if (!can_rewind(stream, pos))
    throw Error("rewind: stream " + std::to_string(stream) + " cannot go back from position " +
                std::to_string(position(stream)) + " to " + std::to_string(pos) +
                " (its sliding-window layers no longer hold the keys before it)");
  check_not_in_flight(stream, "rewind");
  StreamState& s = stream_state(stream);
  s.counter -= std::min<uint32_t>(s.counter, uint32_t(s.tokens.size()) - pos);
  s.tokens.resize(pos);
  s.ring_from = std::min(s.ring_from, pos);  // nothing from pos on is this sequence's any more
}

UNICORN_DECL void EngineCore::copy_prefix(uint32_t from, uint32_t to, uint32_t n) {
  check_stream(from);
  check_stream(to);
  if (from == to) throw Error("copy_prefix: stream " + std::to_string(from) + " onto itself");
  if (n > position(from) || !can_rewind(from, n))
    throw Error("copy_prefix: stream " + std::to_string(from) + " does not hold its first " + std::to_string(n) +
                " tokens' keys (it holds " + std::to_string(position(from)) + " tokens)");
  check_not_in_flight(from, "copy_prefix");
  check_not_in_flight(to, "copy_prefix");
  // Row s * kv_heads + h of a layer's K or V cache is stream s's head h
  // (layout.hpp); position p sits in slot p, or p mod the ring's slots.
  struct Copy {
    vk::Buffer src, dst;
    vk::BufferCopy region;
  };
  std::vector<Copy> copies;
  const uint32_t heads = cfg_.model.kv_heads, head_dim = cfg_.model.head_dim;
  const auto locate = [&](const TensorSlot& t, uint64_t row, uint64_t row_bytes) {
    for (const TensorPart& p : layout_.parts_of(t))
      if (row >= p.row_begin && row < p.row_begin + p.rows)
        return std::pair{slab_of(t, p).handle, p.offset + (row - p.row_begin) * row_bytes};
    throw Error("internal: KV row " + std::to_string(row) + " is in no part");
  };
  for (uint32_t layer = 0; layer < cfg_.model.layers; ++layer)
    for (const Role role : {Role::KCache, Role::VCache}) {
      const TensorSlot& t = layout_.kv(role, int(layer));
      const uint64_t row_bytes = t.bytes / t.rows, slots = t.cols / head_dim;
      const uint64_t bytes = std::min<uint64_t>(n, slots) * (row_bytes / slots);
      if (bytes == 0) continue;
      for (uint32_t h = 0; h < heads; ++h) {
        const auto [src, src_at] = locate(t, uint64_t(from) * heads + h, row_bytes);
        const auto [dst, dst_at] = locate(t, uint64_t(to) * heads + h, row_bytes);
        copies.push_back({src, dst, vk::BufferCopy{src_at, dst_at, bytes}});
      }
    }
  StreamState& d = stream_state(to);
  const StreamState& s = stream_state(from);
  d.tokens.assign(s.tokens.begin(), s.tokens.begin() + n);
  d.ring_from = std::min(s.ring_from, n);
  d.sampled = {};
  decode_lane().stream.run_once([&](vk::CommandBuffer cb) {
    for (const Copy& c : copies) cb.copyBuffer(c.src, c.dst, c.region);
  });
}

UNICORN_DECL void EngineCore::set_sampling(const SamplingParams& p) {
  for (uint32_t s = 0; s < cfg_.streams; ++s) set_sampling(s, p);
}

UNICORN_DECL void EngineCore::set_sampling(uint32_t stream, const SamplingParams& p) {
  if (!sampling_params_valid(p, kMaxPenaltyHistory)) throw Error(sampling_params_rule(kMaxPenaltyHistory));
  if (const std::string problem = logit_bias_problem(p.logit_bias, cfg_.model.vocab); !problem.empty())
    throw Error(problem);
  check_not_in_flight(stream, "set_sampling");
  StreamState& s = stream_state(stream);
  s.sampling = p;
  s.counter = 0;
  s.sampled = {};
  s.allowed.clear();
}

UNICORN_DECL void EngineCore::constrain(uint32_t stream, std::span<const uint32_t> allowed) {
  check_not_in_flight(stream, "constrain");
  StreamState& s = stream_state(stream);
  if (allowed.empty()) return s.allowed.clear();
  if (allowed.size() != mask_words())
    throw Error("constrain: a mask of " + std::to_string(allowed.size()) + " words; this engine's vocabulary of " +
                std::to_string(cfg_.model.vocab) + " tokens takes " + std::to_string(mask_words()));
  const uint32_t tail = cfg_.model.vocab % 32;  // bits past the vocabulary are no tokens
  const uint32_t last = tail ? allowed.back() & ((1u << tail) - 1) : allowed.back();
  if (last == 0 && std::all_of(allowed.begin(), allowed.end() - 1, [](uint32_t w) { return w == 0; }))
    throw Error("constrain: the mask allows no token, so none could be chosen");
  s.allowed.assign(allowed.begin(), allowed.end());
}

UNICORN_DECL int32_t EngineCore::prefill(uint32_t stream, std::span<const int32_t> tokens,
                                         std::span<const PromptImage> images) {
  check_tokens(stream, tokens);
  if (tokens.empty()) throw Error("prefill: the prompt is empty");
  check_images_fit(position(stream), tokens.size(), cfg_.prefill_chunk, images, "prefill");
  // Chunks as long as a pass holds, each ending before an image it would cut
  // (without images: prefill_chunk tokens each); the last ends the prompt.
  for (size_t done = 0;;) {
    const size_t n = chunk_tokens(position(stream), tokens.size() - done, cfg_.prefill_chunk, images);
    const PromptChunk chunk{stream, tokens.subspan(done, n), done + n == tokens.size(), images};
    const int32_t next = prefill(std::span(&chunk, 1))[0];
    if ((done += n) == tokens.size()) return next;
  }
}

UNICORN_DECL void EngineCore::feed(uint32_t stream, std::span<const int32_t> tokens,
                                   std::span<const PromptImage> images) {
  check_tokens(stream, tokens);
  check_images_fit(position(stream), tokens.size(), cfg_.prefill_chunk, images, "feed");
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = chunk_tokens(position(stream), tokens.size() - done, cfg_.prefill_chunk, images);
    const PromptChunk chunk{stream, tokens.subspan(done, n), false, images};
    prefill(std::span(&chunk, 1));
    done += n;
  }
}

UNICORN_DECL std::vector<int32_t> EngineCore::prefill(std::span<const PromptChunk> chunks) {
  begin_prefill(chunks);
  return finish_prefill();
}

UNICORN_DECL void EngineCore::begin_prefill(std::span<const PromptChunk> chunks) {
  if (prefill_in_flight()) throw Error("prefill: a prefill pass is already in flight");
  if (chunks.empty()) throw Error("prefill: no prompt chunks");
  uint32_t rows = 0, ends = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const PromptChunk& c = chunks[i];
    check_tokens(c.stream, c.tokens);
    if (c.tokens.empty()) throw Error("prefill: stream " + std::to_string(c.stream) + "'s chunk is empty");
    check_images(c.stream, position(c.stream), c.tokens.size(), c.images);
    for (size_t j = 0; j < i; ++j)
      if (chunks[j].stream == c.stream)
        throw Error("prefill: stream " + std::to_string(c.stream) + " appears twice in one pass");
    rows = prefill_segment_start(rows) + uint32_t(c.tokens.size());
    ends += c.ends_prompt;
  }
  if (rows > cfg_.prefill_chunk)
    throw Error("prefill: the chunks take " + std::to_string(rows) + " rows (each starting at a multiple of " +
                std::to_string(prefill_alignment()) + "); a pass holds " + std::to_string(cfg_.prefill_chunk));
  if (ends > std::min(cfg_.streams, layout_.logit_rows))
    throw Error("prefill: " + std::to_string(ends) + " prompts end in one pass; at most " +
                std::to_string(std::min(cfg_.streams, layout_.logit_rows)));
  if (ends > 1 && !prefill_many_logits_)
    prefill_many_logits_ = record_forward(cfg_.prefill_chunk, std::min(cfg_.streams, layout_.logit_rows),
                                          PassKind::Prefill);
  const Graph& graph = ends > 1 ? *prefill_many_logits_ : *prefill_;
  Lane& lane = *graph.lane;
  // Each chunk is a segment of rows; rows between segments repeat the
  // previous segment's last token (twins: the same values written to the
  // same cache slots), so no attention tile holds two streams' rows.
  // A twin of an image's row takes the same soft token.
  std::vector<StepRow> step;
  std::vector<SoftRow> soft;
  std::vector<uint32_t> logit_streams;
  std::vector<InFlight> pass;
  for (const PromptChunk& c : chunks) {
    while (step.size() < prefill_segment_start(uint32_t(step.size()))) {
      if (!soft.empty() && soft.back().row + 1 == step.size())
        soft.push_back({uint32_t(step.size()), soft.back().source, soft.back().offset});
      step.push_back(step.back());
    }
    StreamState& s = streams_[c.stream];
    const uint32_t pos = uint32_t(s.tokens.size()), first_row = uint32_t(step.size());
    for (size_t t = 0; t < c.tokens.size(); ++t)
      step.push_back({uint32_t(c.tokens[t]), pos + uint32_t(t), c.stream, 0});
    place_images(std::span(step).subspan(first_row), first_row, c.images, soft);
    pass.push_back({c.stream, s.tokens.size(), c.ends_prompt});
    s.tokens.insert(s.tokens.end(), c.tokens.begin(), c.tokens.end());
    note_written(s);
    if (c.ends_prompt) {
      step[logit_streams.size()].logit_source = uint32_t(step.size() - 1);
      logit_streams.push_back(c.stream);
    }
  }
  write_step(lane, step, uint32_t(logit_streams.size()));
  for (size_t j = 0; j < logit_streams.size(); ++j) write_sampler(lane, uint32_t(j), logit_streams[j]);
  try {
    copy_soft_tokens(lane, soft);
    lane.stream.submit(*graph.commands, other_lane(lane));
  } catch (...) {
    for (const InFlight& f : pass) streams_[f.stream].tokens.resize(f.tokens_before);
    throw;
  }
  in_flight_ = std::move(pass);
}

UNICORN_DECL std::vector<int32_t> EngineCore::finish_prefill() {
  if (!prefill_in_flight()) throw Error("prefill: no prefill pass is in flight");
  const std::vector<InFlight> pass = std::move(in_flight_);
  in_flight_.clear();
  try {
    prefill_lane_->stream.wait();
  } catch (...) {
    for (const InFlight& f : pass) streams_[f.stream].tokens.resize(f.tokens_before);
    throw;
  }
  std::vector<int32_t> next(pass.size(), -1);
  for (size_t i = 0, j = 0; i < pass.size(); ++i)
    if (pass[i].ends_prompt) next[i] = chosen_token(*prefill_lane_, uint32_t(j++));
  return next;
}

UNICORN_DECL uint32_t EngineCore::prefill_segment_start(uint32_t rows) const {
  const uint32_t a = prefill_alignment();
  return (rows + a - 1) / a * a;
}

UNICORN_DECL std::vector<PromptChunk> EngineCore::prefill_pass(std::span<const PromptChunk> waiting) const {
  std::vector<PromptChunk> pass;
  uint32_t rows = 0;
  for (const PromptChunk& c : waiting) {
    const uint32_t start = prefill_segment_start(rows);
    if (start >= cfg_.prefill_chunk) break;
    // An image that does not fit the rows left waits for the next pass;
    // one that fits no pass is refused.
    const size_t room = cfg_.prefill_chunk - start;
    if (start == 0) check_images_fit(position(c.stream), c.tokens.size(), room, c.images, "prefill");
    const size_t n = chunk_tokens(position(c.stream), c.tokens.size(), room, c.images);
    if (n == 0) break;
    pass.push_back({c.stream, c.tokens.first(n), c.ends_prompt && n == c.tokens.size(), c.images});
    rows = start + uint32_t(n);
  }
  return pass;
}

UNICORN_DECL size_t EngineCore::chunk_tokens(uint32_t pos, size_t count, size_t room,
                                             std::span<const PromptImage> images) {
  size_t n = std::min(count, room);
  // Images do not overlap (check_images), so the one the end would cut is the
  // only one, and ending before it cuts no other.
  for (const PromptImage& image : images) {
    const uint64_t begin = image.pos, end = uint64_t(image.pos) + image.rows;
    if (begin >= pos && begin < pos + n && end > pos + n) return begin - pos;
  }
  return n;
}

UNICORN_DECL void EngineCore::check_images_fit(uint32_t pos, size_t count, size_t room,
                                               std::span<const PromptImage> images, const char* what) {
  for (const PromptImage& image : images)
    if (image.rows > room && image.pos < pos + count && uint64_t(image.pos) + image.rows > pos)
      throw Error(std::string(what) + ": an image of " + std::to_string(image.rows) + " soft tokens at position " +
                  std::to_string(image.pos) + " does not fit a prefill pass of " + std::to_string(room) +
                  " rows: its tokens attend to each other, so they go through one pass (compile a deployment "
                  "whose prefill_chunk holds the image's tokens)");
}

UNICORN_DECL void EngineCore::check_images(uint32_t stream, uint32_t pos, size_t n,
                                           std::span<const PromptImage> images) const {
  const uint64_t chunk_end = uint64_t(pos) + n;
  const auto where = [&](uint64_t begin, uint64_t end) {
    return "stream " + std::to_string(stream) + "'s image at positions [" + std::to_string(begin) + ", " +
           std::to_string(end) + ")";
  };
  for (size_t i = 0; i < images.size(); ++i) {
    const PromptImage& image = images[i];
    const uint64_t begin = image.pos, end = begin + image.rows;
    if (image.rows == 0) throw Error("prefill: " + where(begin, end) + " has no soft tokens");
    if (end <= pos || begin >= chunk_end) continue;  // fed before this chunk, or after it
    if (begin < pos || end > chunk_end)
      throw Error("prefill: " + where(begin, end) + " is cut by a chunk of positions [" + std::to_string(pos) +
                  ", " + std::to_string(chunk_end) + "): an image's soft tokens attend to each other, so they "
                  "go through one pass (EngineCore::prefill_pass and prefill chunk them so)");
    const uint64_t bytes = uint64_t(image.rows) * cfg_.model.hidden * 4;
    if (!image.soft_tokens || image.offset + bytes > image.soft_tokens->size)
      throw Error("prefill: " + where(begin, end) + " needs " + std::to_string(bytes) + " bytes of soft tokens ([" +
                  std::to_string(image.rows) + ", " + std::to_string(cfg_.model.hidden) + "] float32) from byte " +
                  std::to_string(image.offset) + " of a buffer of " +
                  std::to_string(image.soft_tokens ? image.soft_tokens->size : 0));
    for (size_t j = 0; j < i; ++j)
      if (images[j].pos < end && begin < uint64_t(images[j].pos) + images[j].rows)
        throw Error("prefill: " + where(begin, end) + " overlaps " +
                    where(images[j].pos, uint64_t(images[j].pos) + images[j].rows));
  }
}

UNICORN_DECL void EngineCore::place_images(std::span<StepRow> rows, uint32_t first_row,
                                           std::span<const PromptImage> images, std::vector<SoftRow>& soft) const {
  const uint32_t pos = rows.empty() ? 0 : rows[0].pos;
  const uint64_t row_bytes = uint64_t(cfg_.model.hidden) * 4;
  for (const PromptImage& image : images) {
    if (image.pos < pos || image.pos >= pos + rows.size()) continue;  // whole in the chunk, or out of it
    for (uint32_t i = 0; i < image.rows; ++i) {
      StepRow& row = rows[image.pos - pos + i];
      row.token = StepRow::kEmbeddedRow;
      row.sees_ahead = image.rows - 1 - i;  // to the image's last token
      soft.push_back({first_row + image.pos - pos + i, image.soft_tokens, image.offset + i * row_bytes});
    }
  }
}

UNICORN_DECL void EngineCore::copy_soft_tokens(Lane& lane, std::span<const SoftRow> soft) {
  if (soft.empty()) return;
  const uint64_t row_bytes = uint64_t(cfg_.model.hidden) * 4;
  // One region per run of rows consecutive in both buffers (an image: one run).
  struct Copy {
    vk::Buffer source;
    vk::BufferCopy region;
  };
  std::vector<Copy> copies;
  for (const SoftRow& r : soft) {
    Copy* last = copies.empty() ? nullptr : &copies.back();
    if (last && last->source == r.source->handle && last->region.srcOffset + last->region.size == r.offset &&
        last->region.dstOffset + last->region.size == r.row * row_bytes)
      last->region.size += row_bytes;
    else
      copies.push_back({r.source->handle, vk::BufferCopy{r.offset, r.row * row_bytes, row_bytes}});
  }
  const vk::Buffer x = lane.acts[size_t(Act::X)].handle;
  lane.stream.run_once([&](vk::CommandBuffer cb) {
    for (const Copy& c : copies) cb.copyBuffer(c.source, x, c.region);
  });
}

UNICORN_DECL int32_t EngineCore::decode(int32_t token) {
  const int32_t one[] = {token};
  check_tokens(0, one);
  check_not_in_flight(0, "decode");
  const StreamToken row[] = {{0, token}};
  write_step(*decode_->lane, row);
  run(*decode_, row);
  return chosen_token(*decode_->lane, 0);
}

UNICORN_DECL std::vector<int32_t> EngineCore::decode(std::span<const StreamToken> batch) {
  check_batch(batch);
  const Graph& graph = batch_pass(uint32_t(batch.size()));
  write_step(*graph.lane, batch);
  run(graph, batch);
  std::vector<int32_t> next(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) next[i] = chosen_token(*graph.lane, uint32_t(i));
  return next;
}

UNICORN_DECL std::vector<int32_t> EngineCore::verify(uint32_t stream, std::span<const int32_t> tokens) {
  if (!verify_)
    throw Error("verify: this engine has no verify pass (its deployment drafts nothing: DeploymentConfig::draft_max is 0)");
  if (tokens.empty() || tokens.size() > verify_rows())
    throw Error("verify: " + std::to_string(tokens.size()) + " tokens; the verify pass takes 1 to " +
                std::to_string(verify_rows()) + " (DeploymentConfig::draft_max + 1)");
  check_tokens(stream, tokens);
  check_not_in_flight(stream, "verify");
  if (constrained(stream))
    throw Error("verify: stream " + std::to_string(stream) +
                " is constrained (its allowed-token mask holds for one token at a time): decode it");
  Lane& lane = *verify_->lane;
  const uint32_t n = uint32_t(tokens.size());
  write_step(lane, chunk_rows(stream, tokens, 0, n), n);
  StreamState& s = streams_[stream];
  const size_t tokens_before = s.tokens.size();
  const uint32_t counter_before = s.counter;
  // Row i's sampler sees the tokens up to tokens[i] and draws with the
  // counter decode() would have there.
  for (uint32_t i = 0; i < n; ++i) {
    s.tokens.push_back(tokens[i]);
    note_written(s);
    write_sampler(lane, i, stream);
  }
  try {
    submit(*verify_, tokens_before, stream);
  } catch (...) {
    s.counter = counter_before;
    throw;
  }
  std::vector<int32_t> chosen(n);
  for (uint32_t i = 0; i < n; ++i) chosen[i] = chosen_token(lane, i);
  return chosen;
}

UNICORN_DECL void EngineCore::note_written(StreamState& s) const {
  const uint32_t end = uint32_t(s.tokens.size()), ring = layout_.local_kv_slots;
  if (end > ring) s.ring_from = std::max(s.ring_from, end - ring);
}

UNICORN_DECL EngineCore::StreamState& EngineCore::stream_state(uint32_t stream) {
  check_stream(stream);
  return streams_[stream];
}

UNICORN_DECL const EngineCore::StreamState& EngineCore::stream_state(uint32_t stream) const {
  check_stream(stream);
  return streams_[stream];
}

UNICORN_DECL void EngineCore::check_stream(uint32_t stream) const {
  if (stream >= cfg_.streams)
    throw Error("stream " + std::to_string(stream) + " does not exist: this engine has " +
                std::to_string(cfg_.streams) + (cfg_.streams == 1 ? " stream" : " streams") +
                " (EngineOptions::streams, at most the compiled DeploymentConfig::streams)");
}

UNICORN_DECL void EngineCore::check_tokens(uint32_t stream, std::span<const int32_t> tokens) const {
  for (int32_t t : tokens)
    if (t < 0 || uint32_t(t) >= cfg_.model.vocab)
      throw Error("token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                  std::to_string(cfg_.model.vocab) + ")");
  const uint32_t pos = position(stream);
  if (uint64_t(pos) + tokens.size() > context_limit_)
    throw Error("context full: " + std::to_string(tokens.size()) + " tokens at position " +
                std::to_string(pos) + (cfg_.streams > 1 ? " of stream " + std::to_string(stream) : "") +
                " exceed the context of " + std::to_string(context_limit_) + " tokens");
}

UNICORN_DECL void EngineCore::check_batch(std::span<const StreamToken> batch) const {
  if (batch.empty()) throw Error("decode: the batch is empty");
  if (batch.size() > cfg_.streams)
    throw Error("decode: " + std::to_string(batch.size()) + " tokens in one step; this engine is "
                "compiled for " + std::to_string(cfg_.streams) + " streams, one token each");
  for (size_t i = 0; i < batch.size(); ++i) {
    const int32_t one[] = {batch[i].token};
    check_tokens(batch[i].stream, one);
    check_not_in_flight(batch[i].stream, "decode");
    for (size_t j = 0; j < i; ++j)
      if (batch[j].stream == batch[i].stream)
        throw Error("decode: stream " + std::to_string(batch[i].stream) +
                    " appears twice in one step; a step takes one token per stream");
  }
}

UNICORN_DECL std::vector<StepRow> EngineCore::chunk_rows(uint32_t stream, std::span<const int32_t> tokens, uint32_t logit_begin, uint32_t logit_count) const {
  const uint32_t pos = uint32_t(streams_[stream].tokens.size());
  std::vector<StepRow> rows(tokens.size());
  for (size_t t = 0; t < tokens.size(); ++t) rows[t] = {uint32_t(tokens[t]), pos + uint32_t(t), stream, 0};
  for (uint32_t i = 0; i < logit_count; ++i) rows[i].logit_source = logit_begin + i;
  return rows;
}

UNICORN_DECL void EngineCore::check_not_in_flight(uint32_t stream, const char* what) const {
  for (const InFlight& f : in_flight_)
    if (f.stream == stream)
      throw Error(std::string(what) + ": stream " + std::to_string(stream) +
                  " is in the prefill pass in flight (finish_prefill first)");
}

UNICORN_DECL void EngineCore::write_step(Lane& lane, std::span<const StreamToken> batch) {
  std::vector<StepRow> rows(batch.size());
  for (size_t t = 0; t < batch.size(); ++t)
    rows[t] = {uint32_t(batch[t].token), uint32_t(streams_[batch[t].stream].tokens.size()), batch[t].stream,
               uint32_t(t)};
  write_step(lane, rows, uint32_t(rows.size()));
}

UNICORN_DECL void EngineCore::write_step(Lane& lane, std::span<const StepRow> rows, uint32_t logit_count) {
  const StepHeader h{uint32_t(rows.size()), logit_count};
  std::byte* p = lane.step_rows().mapped;
  std::memcpy(p, &h, sizeof h);
  std::memcpy(p + sizeof h, rows.data(), rows.size_bytes());
}

UNICORN_DECL void EngineCore::run_chunk(const Graph& graph, uint32_t stream, std::span<const int32_t> tokens,
                                        std::span<const PromptImage> images) {
  if (prefill_in_flight()) throw Error("prefill: a prefill pass is in flight");
  check_images(stream, position(stream), tokens.size(), images);
  Lane& lane = *graph.lane;
  const uint32_t n = uint32_t(tokens.size());
  std::vector<StepRow> rows = chunk_rows(stream, tokens, 0, n);
  std::vector<SoftRow> soft;
  place_images(rows, 0, images, soft);
  write_step(lane, rows, n);
  copy_soft_tokens(lane, soft);
  StreamState& s = streams_[stream];
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
  note_written(s);
  // The sampler kernels run on every logit row, so every row gets the
  // stream's state: a row left unwritten would sample with whatever the
  // buffer held (a penalty history billions of entries long).
  write_sampler(lane, 0, stream);
  for (uint32_t row = 1; row < n; ++row)
    std::memcpy(lane.sampler_rows().mapped + row * kSamplerRowBytes, lane.sampler_rows().mapped, kSamplerRowBytes);
  submit(graph, s.tokens.size() - tokens.size(), stream);
}

UNICORN_DECL void EngineCore::run(const Graph& graph, std::span<const StreamToken> batch) {
  for (size_t i = 0; i < batch.size(); ++i) {
    streams_[batch[i].stream].tokens.push_back(batch[i].token);
    note_written(streams_[batch[i].stream]);
    write_sampler(*graph.lane, uint32_t(i), batch[i].stream);
  }
  try {
    graph.lane->stream.submit_and_wait(*graph.commands, other_lane(*graph.lane));
  } catch (...) {
    for (const StreamToken& t : batch) streams_[t.stream].tokens.pop_back();
    throw;
  }
}

UNICORN_DECL void EngineCore::submit(const Graph& graph, size_t stream_tokens_before, uint32_t stream) {
  try {
    graph.lane->stream.submit_and_wait(*graph.commands, other_lane(*graph.lane));
  } catch (...) {
    streams_[stream].tokens.resize(stream_tokens_before);
    throw;
  }
}

UNICORN_DECL void EngineCore::write_sampler(Lane& lane, uint32_t row, uint32_t stream) {
  StreamState& st = streams_[stream];
  static const SamplingParams kRaw;  // teacher forcing reads the logits as the model made them
  const SamplingParams& p = raw_logits_ ? kRaw : st.sampling;
  std::vector<uint32_t> history, counts;
  if (p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    const size_t n = std::min<size_t>(p.repeat_last_n, st.tokens.size());
    for (size_t i = st.tokens.size() - n; i < st.tokens.size(); ++i) {
      const uint32_t t = uint32_t(st.tokens[i]);
      const auto at = std::find(history.begin(), history.end(), t);
      if (at == history.end()) {
        history.push_back(t);
        counts.push_back(1);
      } else {
        counts[size_t(at - history.begin())] += 1;
      }
    }
  }
  const SamplerState s{p.temperature,      p.top_k,    p.top_p, p.min_p, p.repeat_penalty,
                       p.seed,             st.counter++, uint32_t(history.size()), 0,
                       p.presence_penalty, p.frequency_penalty, uint32_t(p.logit_bias.size()),
                       p.logprobs ? 1 + p.top_logprobs : 0};
  st.sampled = p.logprobs ? StreamState::Sampled{&lane, row} : StreamState::Sampled{};
  std::byte* out = lane.sampler_rows().mapped + row * kSamplerRowBytes;
  std::memcpy(out, &s, sizeof s);
  if (!raw_logits_ && !st.allowed.empty()) {  // the lane's copy of the stream's mask (logits_max.comp)
    const uint32_t masked = 1;
    std::memcpy(out + offsetof(SamplerState, masked), &masked, 4);
    std::memcpy(lane.masks().mapped + 4ull * mask_words() * stream, st.allowed.data(), 4ull * mask_words());
  }
  for (size_t i = 0; i < p.logit_bias.size(); ++i) {
    const uint32_t id = uint32_t(p.logit_bias[i].first);
    std::memcpy(out + kSamplerBiasOffset + 4 * i, &id, 4);
    std::memcpy(out + kSamplerBiasOffset + 4ull * kMaxLogitBias + 4 * i, &p.logit_bias[i].second, 4);
  }
  if (history.empty()) return;
  std::memcpy(out + sizeof s, history.data(), history.size() * 4);
  std::memcpy(out + sizeof s + 4ull * kMaxPenaltyHistory, counts.data(), counts.size() * 4);
}

UNICORN_DECL void EngineCore::read_logits(Lane& lane, uint32_t n, float* out) {
  const gpu::Buffer& logits = lane.acts[size_t(Act::Logits)];
  if (!lane.logits_readback) {
    const uint64_t bytes[] = {logits.size};
    lane.logits_readback = gpu::BufferSet(ctx_, bytes, gpu::MemoryKind::HostVisible, "logits read-back");
  }
  const uint64_t bytes = uint64_t(n) * cfg_.model.vocab * 4;
  lane.stream.run_once([&](vk::CommandBuffer cb) {
    cb.copyBuffer(logits.handle, (*lane.logits_readback)[0].handle, vk::BufferCopy{0, 0, bytes});
  });
  std::memcpy(out, (*lane.logits_readback)[0].mapped, bytes);
}

UNICORN_DECL TokenLogprobs EngineCore::logprobs(uint32_t stream) const {
  const StreamState& s = stream_state(stream);
  if (!s.sampling.logprobs)
    throw Error("logprobs: stream " + std::to_string(stream) + "'s sampling does not ask for them (SamplingParams::logprobs)");
  if (!s.sampled.lane) throw Error("logprobs: stream " + std::to_string(stream) + " has chosen no token yet");
  return read_logprobs(*s.sampled.lane, s.sampled.row);
}

UNICORN_DECL TokenLogprobs EngineCore::read_logprobs(const Lane& lane, uint32_t logit_row) const {
  float row[kLogprobRowFloats];
  std::memcpy(row, lane.logprob_rows().mapped + uint64_t(logit_row) * sizeof row, sizeof row);
  TokenLogprobs out{row[0], {}};
  uint32_t top;
  std::memcpy(&top, &row[1], 4);
  for (uint32_t j = 0; j < std::min(top, kMaxTopLogprobs); ++j) {
    uint32_t id;
    std::memcpy(&id, &row[2 + 2 * j], 4);
    out.top.push_back({int32_t(id), row[3 + 2 * j]});
  }
  return out;
}

UNICORN_DECL int32_t EngineCore::chosen_token(const Lane& lane, uint32_t row) const {
  uint32_t id;
  std::memcpy(&id, lane.chosen().mapped + 4 * row, 4);
  if (id >= cfg_.model.vocab)
    throw Error("the model produced no valid token (logits are NaN): check the weights file");
  return int32_t(id);
}

}  // namespace unicorn::detail
