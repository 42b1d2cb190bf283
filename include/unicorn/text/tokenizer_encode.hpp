// unicorn/text/tokenizer_encode.hpp — Tokenizer's encode and decode: added
// tokens cut out first, then BPE per word (a rescan for short words, a heap for
// long ones), byte fallback for what the vocabulary lacks. Included by
// tokenizer.hpp where its code is compiled (unicorn/base/linkage.hpp).
#pragma once

#include <queue>

#include "unicorn/text/tokenizer.hpp"

namespace unicorn::text {

UNICORN_DECL std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_bos) {
    if (bos_id_ < 0) throw Error("tokenizer: add_bos requested but the vocabulary has no <bos>");
    ids.push_back(bos_id_);
  }
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = repair_utf8(text);
    text = repaired;
  }
  Scratch scratch;
  size_t section = 0;
  for (size_t i = 0; i < text.size();) {
    if (added_.may_start(text[i])) {
      const auto [id, len] = added_.match(text, i);
      if (id >= 0) {
        encode_section(text.substr(section, i - section), ids, scratch);
        ids.push_back(id);
        i += len;
        section = i;
        continue;
      }
    }
    ++i;
  }
  encode_section(text.substr(section), ids, scratch);
  return ids;
}

UNICORN_DECL std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string raw;
  for (const int32_t id : ids) {
    check_id(id);
    if (skip_special && is_special(id)) continue;
    raw += pieces_[static_cast<size_t>(id)];
  }
  // Byte tokens are the only source of invalid UTF-8, and the bytes of an
  // invalid run cannot combine with a following token's text (which starts
  // with a lead byte), so repairing the whole string equals repairing each
  // run on its own.
  return repair_utf8(raw);
}

UNICORN_DECL void Tokenizer::encode_section(std::string_view raw, std::vector<int32_t>& ids, Scratch& s) const {
  if (raw.empty()) return;
  std::string_view text = raw;
  if (!normalize_from_.empty() && raw.find(normalize_from_) != std::string_view::npos) {
    s.normalized = replace_all(raw, normalize_from_, normalize_to_);
    text = s.normalized;
  }
  if (ignore_merges_) {
    if (const int32_t id = find_token(text); id >= 0) {
      ids.push_back(id);
      return;
    }
  }
  const size_t first_new = ids.size();
  const std::string_view marker = normalize_to_;
  size_t word = 0, prev_cp = 0;
  for (size_t i = 0; i < text.size();) {
    const int len = utf8_length(static_cast<unsigned char>(text[i]));
    if (i > word && !marker.empty() && text.compare(i, marker.size(), marker) == 0) {
      const std::string_view before = text.substr(prev_cp, i - prev_cp);
      if (before != marker && !glue_.contains(before)) {
        bpe_word(text.substr(word, i - word), ids, s);
        word = i;
      }
    }
    prev_cp = i;
    i += static_cast<size_t>(len);
  }
  bpe_word(text.substr(word), ids, s);
  if (fuse_unk_ && unk_id_ >= 0) {
    auto out = ids.begin() + static_cast<std::ptrdiff_t>(first_new);
    for (auto in = out; in != ids.end(); ++in) {
      if (*in == unk_id_ && out != ids.begin() + static_cast<std::ptrdiff_t>(first_new) &&
          *(out - 1) == unk_id_)
        continue;
      *out++ = *in;
    }
    ids.erase(out, ids.end());
  }
}

UNICORN_DECL void Tokenizer::bpe_word(std::string_view w, std::vector<int32_t>& ids, Scratch& s) const {
  if (w.empty()) return;
  auto& sym = s.symbols;
  sym.clear();
  for (size_t i = 0; i < w.size();) {
    const int len = utf8_length(static_cast<unsigned char>(w[i]));
    sym.push_back({char_id(utf8_decode(w.data() + i, len)), static_cast<uint32_t>(i),
                   static_cast<uint32_t>(len)});
    i += static_cast<size_t>(len);
  }
  if (sym.size() <= kSmallWord) merge_small(s);
  else merge_large(s);
  for (const Symbol& x : sym) {
    if (x.len == 0) continue;  // merged away (large path)
    if (x.id >= 0) {
      ids.push_back(x.id);
    } else {
      emit_unknown(w.substr(x.begin, x.len), ids);
    }
  }
}

UNICORN_DECL void Tokenizer::emit_unknown(std::string_view bytes, std::vector<int32_t>& ids) const {
  bool all = byte_fallback_;
  for (const char c : bytes) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
  if (all) {
    for (const char c : bytes) ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
  } else if (unk_id_ >= 0) {
    ids.push_back(unk_id_);
  } else {
    std::string hex;
    for (const char c : bytes) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      hex += std::string(hex.empty() ? "" : " ") + kHex[static_cast<unsigned char>(c) >> 4] +
             kHex[static_cast<unsigned char>(c) & 15];
    }
    throw Error("tokenizer: the text holds a character (UTF-8 " + hex + ") that is not in the vocabulary, "
                "which has no byte tokens for it and no <unk>");
  }
}

UNICORN_DECL void Tokenizer::merge_small(Scratch& s) const {
  auto& sym = s.symbols;
  auto& rank = s.ranks;
  auto& merged = s.merged;
  size_t n = sym.size();
  rank.resize(n);
  merged.resize(n);
  for (size_t i = 0; i + 1 < n; ++i) rank[i] = pair_rank(sym[i].id, sym[i + 1].id, merged[i]);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (rank[i] < rank[best]) best = i;  // strict: leftmost wins ties
    }
    if (rank[best] == kNoMerge) break;
    sym[best].id = merged[best];
    sym[best].len += sym[best + 1].len;
    for (size_t i = best + 1; i + 1 < n; ++i) {
      sym[i] = sym[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best > 0) rank[best - 1] = pair_rank(sym[best - 1].id, sym[best].id, merged[best - 1]);
    if (best + 1 < n) rank[best] = pair_rank(sym[best].id, sym[best + 1].id, merged[best]);
  }
  sym.resize(n);
}

UNICORN_DECL void Tokenizer::merge_large(Scratch& s) const {
  auto& sym = s.symbols;
  const auto n = static_cast<int32_t>(sym.size());
  auto& prev = s.prev;
  auto& next = s.next;
  prev.resize(static_cast<size_t>(n));
  next.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    uint32_t rank;
    int32_t left, left_id, right_id, merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t left) {
    const int32_t right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    int32_t m = -1;
    const int32_t a = sym[static_cast<size_t>(left)].id, b = sym[static_cast<size_t>(right)].id;
    const uint32_t r = pair_rank(a, b, m);
    if (r != kNoMerge) heap.push({r, left, a, b, m});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[static_cast<size_t>(c.left)];
    const int32_t right = next[static_cast<size_t>(c.left)];
    if (l.len == 0 || right < 0 || l.id != c.left_id || sym[static_cast<size_t>(right)].id != c.right_id)
      continue;
    Symbol& r = sym[static_cast<size_t>(right)];
    l.id = c.merged;
    l.len += r.len;
    r.len = 0;
    const int32_t after = next[static_cast<size_t>(right)];
    next[static_cast<size_t>(c.left)] = after;
    if (after >= 0) prev[static_cast<size_t>(after)] = c.left;
    if (prev[static_cast<size_t>(c.left)] >= 0) consider(prev[static_cast<size_t>(c.left)]);
    consider(c.left);
  }
}

}  // namespace unicorn::text
