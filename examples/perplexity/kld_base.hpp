// examples/perplexity/kld_base.hpp — the file of a reference run's log-probabilities,
// which unicorn-perplexity --kl-divergence-base writes and --kl-divergence reads.
//
// Layout, little-endian:
//   "UNIKLD01"                       8 bytes
//   u32 vocab, ctx, chunks, scored   scored = ctx - 1 - ctx / 2 positions per window
//   i32 tokens[chunks * ctx]         the windows as run (each first token already <bos>)
//   per window, per scored position: f32 floor, f32 log p(next token), u16 q[vocab]
// A row keeps log p(i) = floor + q[i] * kLogProbStep where q[i] > 0; q[i] = 0 marks
// log p(i) <= floor = (the row's largest log p) - kLogProbRange. What is dropped is
// under e^-24 of the top token's probability: under 1e-5 of the mass even over
// 262,144 tokens. The 16-bit steps are 3.7e-4 nats; the reader renormalizes each row,
// so their error reaches a KL divergence only squared (about 1e-8). The next token's
// log-probability is kept exactly: it can lie below the floor (a rare word the model
// did not expect), and the base run's perplexity must come back as it was.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/io/mapped_file.hpp"

namespace unicorn::perplexity {

inline constexpr char kKldMagic[8] = {'U', 'N', 'I', 'K', 'L', 'D', '0', '1'};
inline constexpr float kLogProbRange = 24.0f;
inline constexpr float kLogProbStep = kLogProbRange / 65535.0f;

struct KldHeader {
  uint32_t vocab = 0, ctx = 0, chunks = 0, scored = 0;
};

constexpr uint32_t scored_per_window(uint32_t ctx) { return ctx - 1 - ctx / 2; }

// One row as stored: the floor, the next token's log-probability and the steps above the floor.
struct LogProbRow {
  float floor, next_log_prob;
  std::span<const uint16_t> q;
};

// Quantizes a row of log-probabilities (`max_log_prob` its largest) into q, returning the floor.
inline float quantize_log_probs(std::span<const float> log_probs, float max_log_prob, std::span<uint16_t> q) {
  const float floor = max_log_prob - kLogProbRange;
  for (size_t i = 0; i < log_probs.size(); ++i) {
    const float steps = (log_probs[i] - floor) / kLogProbStep;
    q[i] = steps <= 0.0f ? 0 : uint16_t(std::min(65535.0f, std::nearbyint(steps)));
  }
  return floor;
}

// Streams a base file through io::AtomicFile: written whole by finish() or,
// abandoned (an error), not at all, leaving what stood at `path` as it was.
class KldBaseWriter {
 public:
  KldBaseWriter(std::filesystem::path path, const KldHeader& h, std::span<const int32_t> tokens)
      : out_(std::move(path)) {
    put(kKldMagic, sizeof kKldMagic);
    const uint32_t fields[] = {h.vocab, h.ctx, h.chunks, h.scored};
    put(fields, sizeof fields);
    put(tokens.data(), tokens.size_bytes());
  }

  void add_row(float floor, float next_log_prob, std::span<const uint16_t> q) {
    const float head[] = {floor, next_log_prob};
    put(head, sizeof head);
    put(q.data(), q.size_bytes());
  }

  void finish() { out_.commit(); }

 private:
  void put(const void* p, size_t n) { out_.write(std::span(static_cast<const std::byte*>(p), n)); }
  io::AtomicFile out_;
};

// A base file read from bytes (a mapping, or a fuzzer's input); every field is
// checked, and a file of any other size than its header implies is refused.
class KldBase {
 public:
  static KldBase open(const std::filesystem::path& path) {
    KldBase b;
    b.file_ = io::MappedFile::open(path);
    b.parse(b.file_.bytes(), path.string());
    return b;
  }
  static KldBase parse_bytes(std::span<const std::byte> bytes, const std::string& name) {
    KldBase b;
    b.parse(bytes, name);
    return b;
  }

  const KldHeader& header() const { return h_; }
  std::span<const int32_t> tokens() const { return tokens_; }
  LogProbRow row(uint32_t chunk, uint32_t i) const {
    const std::byte* p = rows_ + (uint64_t(chunk) * h_.scored + i) * row_bytes();
    float head[2];
    std::memcpy(head, p, sizeof head);
    return {head[0], head[1], {reinterpret_cast<const uint16_t*>(p + sizeof head), h_.vocab}};
  }

 private:
  uint64_t row_bytes() const { return 8 + 2 * uint64_t(h_.vocab); }

  void parse(std::span<const std::byte> bytes, const std::string& name) {
    auto fail = [&](const std::string& what) { throw Error(name + ": not a KL-divergence base file: " + what); };
    constexpr size_t kHeaderBytes = sizeof kKldMagic + 16;
    if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kKldMagic, sizeof kKldMagic) != 0)
      fail("no UNIKLD01 header (write one with --kl-divergence-base FILE and no --kl-divergence)");
    uint32_t f[4];
    std::memcpy(f, bytes.data() + sizeof kKldMagic, sizeof f);
    h_ = {f[0], f[1], f[2], f[3]};
    if (h_.vocab == 0 || h_.vocab > (1u << 24)) fail("vocabulary of " + std::to_string(h_.vocab) + " tokens");
    if (h_.ctx < 4 || h_.ctx > (1u << 24)) fail("context of " + std::to_string(h_.ctx) + " tokens");
    if (h_.chunks == 0 || h_.chunks > (1u << 24)) fail(std::to_string(h_.chunks) + " windows");
    if (h_.scored != scored_per_window(h_.ctx))
      fail(std::to_string(h_.scored) + " scored positions a window of " + std::to_string(h_.ctx));
    const uint64_t token_bytes = 4 * uint64_t(h_.ctx) * h_.chunks;  // below 2^50
    uint64_t rows = 0, expected = 0;
    if (__builtin_mul_overflow(uint64_t(h_.chunks) * h_.scored, row_bytes(), &rows) ||
        __builtin_add_overflow(kHeaderBytes + token_bytes, rows, &expected) || bytes.size() != expected)
      fail(std::to_string(bytes.size()) + " bytes, not what its header implies");
    const std::byte* at = bytes.data() + kHeaderBytes;
    tokens_.resize(size_t(h_.ctx) * h_.chunks);
    std::memcpy(tokens_.data(), at, token_bytes);
    for (const int32_t t : tokens_)
      if (t < 0 || uint32_t(t) >= h_.vocab) fail("token id " + std::to_string(t) + " outside the vocabulary");
    rows_ = at + token_bytes;
  }

  io::MappedFile file_;
  KldHeader h_;
  std::vector<int32_t> tokens_;
  const std::byte* rows_ = nullptr;
};

}  // namespace unicorn::perplexity
