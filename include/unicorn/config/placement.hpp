// unicorn/config/placement.hpp — which memory pool each tensor group lives in.
//
// A placement is a structural value: a pool per tensor group, overridden for
// runs of layers by segments (contiguous layers, one pool — STYLE.md). It reads
// like a sentence:
//
//   placement::everything_in(Pool::Vram)
//   placement::Attention<Pool::Vram>::Embeddings<Pool::Vram>::Ffn<Pool::Gtt>{}
//   placement::everything_in(Pool::Vram).with(Group::Ffn, Layers{4, 62}, Pool::Gtt)
//   placement::npu_attention_first_layers(4)
//   placement::per_layer(std::array<LayerPools, 26>{...})     // fully custom
//
// Segments, not one entry per layer: a Gemma 3 placement is a few runs of
// layers, and a fixed-size segment list keeps the value small for any depth.
// Plain constexpr arrays rather than Boost.Hana tuples: every entry has one
// type, so an array reads better (STYLE.md: Hana where it serves).
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <string_view>

namespace unicorn {

// Memory pools. Vram: device-local memory (an APU's carve-out, a discrete GPU's
// memory). Gtt: system memory the GPU reads through its page tables (host-visible;
// on a discrete GPU, read over PCIe). NpuSram: the NPU's on-chip tile memory.
// Cpu: memory only the CPU would use — no inference op runs there, so a
// placement naming it never compiles (no inference op has a CPU path).
enum class Pool : uint8_t { Vram, Gtt, NpuSram, Cpu };
inline constexpr Pool kPools[] = {Pool::Vram, Pool::Gtt, Pool::NpuSram, Pool::Cpu};
inline constexpr size_t kPoolCount = std::size(kPools);

constexpr std::string_view pool_name(Pool p) {
  switch (p) {
    case Pool::Vram: return "Vram";
    case Pool::Gtt: return "Gtt";
    case Pool::NpuSram: return "NpuSram";
    case Pool::Cpu: return "Cpu";
  }
  return "?";
}

// Tensor groups placed together. A layer's norm weights travel with their
// block (attention or FFN); the final norm travels with the embedding, which
// Gemma 3 also reads as the LM head.
enum class Group : uint8_t { Embeddings, Attention, Ffn, KvCache, Activations };
inline constexpr Group kGroups[] = {Group::Embeddings, Group::Attention, Group::Ffn,
                                    Group::KvCache, Group::Activations};
inline constexpr size_t kGroupCount = std::size(kGroups);

constexpr std::string_view group_name(Group g) {
  switch (g) {
    case Group::Embeddings: return "embeddings";
    case Group::Attention: return "attention";
    case Group::Ffn: return "ffn";
    case Group::KvCache: return "kv cache";
    case Group::Activations: return "activations";
  }
  return "?";
}

// Layers [first, last).
struct Layers {
  uint32_t first = 0;
  uint32_t last = 0;
  constexpr bool operator==(const Layers&) const = default;
};

// `group` of layers [first, last) lives in `pool`.
struct Segment {
  Group group = Group::Attention;
  Layers layers;
  Pool pool = Pool::Vram;
  constexpr bool operator==(const Segment&) const = default;
};

// Per-layer pools, for placement::per_layer.
struct LayerPools {
  Pool attention = Pool::Vram;
  Pool ffn = Pool::Vram;
  Pool kv_cache = Pool::Vram;
};

struct Placement {
  static constexpr size_t kMaxSegments = 32;

  std::array<Pool, kGroupCount> base{};  // every group's pool unless a segment says otherwise
  std::array<Segment, kMaxSegments> segments{};
  uint32_t segment_count = 0;

  // The pool of `group` in `layer` (-1 for whole-model tensors). Later
  // segments win over earlier ones.
  constexpr Pool pool_of(Group group, int layer) const {
    for (uint32_t i = segment_count; i-- > 0;) {
      const Segment& s = segments[i];
      if (s.group == group && layer >= 0 && uint32_t(layer) >= s.layers.first &&
          uint32_t(layer) < s.layers.last)
        return s.pool;
    }
    return base[size_t(group)];
  }

  // Copies with one change (gemma.cpp's builder style).
  constexpr Placement with(Group group, Pool pool) const {
    Placement p = *this;
    p.base[size_t(group)] = pool;
    for (uint32_t i = 0; i < p.segment_count; ++i)  // the whole group moves
      if (p.segments[i].group == group) p.segments[i].pool = pool;
    return p;
  }
  constexpr Placement with(Group group, Layers layers, Pool pool) const {
    Placement p = *this;
    // More than kMaxSegments runs is not a constant expression: the compiler
    // points here. Merge runs of layers into fewer segments.
    if (p.segment_count == kMaxSegments) throw "unicorn: a placement holds at most 32 segments";
    p.segments[p.segment_count++] = Segment{group, layers, pool};
    return p;
  }

  constexpr bool uses(Pool pool) const {
    for (Pool b : base)
      if (b == pool) return true;
    for (uint32_t i = 0; i < segment_count; ++i)
      if (segments[i].pool == pool) return true;
    return false;
  }
  constexpr bool operator==(const Placement&) const = default;
};

namespace placement {

// Every group in one pool.
constexpr Placement everything_in(Pool pool) {
  Placement p;
  p.base.fill(pool);
  return p;
}

// The sentence form: start with any group, chain the others; groups not named
// stay in Vram. `Attention<Pool::Vram>::Embeddings<Pool::Vram>::Ffn<Pool::Gtt>`.
template <Pool Emb, Pool Attn, Pool F, Pool Kv, Pool Act>
struct Sentence {
  template <Pool P> using Embeddings = Sentence<P, Attn, F, Kv, Act>;
  template <Pool P> using Attention = Sentence<Emb, P, F, Kv, Act>;
  template <Pool P> using Ffn = Sentence<Emb, Attn, P, Kv, Act>;
  template <Pool P> using KvCache = Sentence<Emb, Attn, F, P, Act>;
  template <Pool P> using Activations = Sentence<Emb, Attn, F, Kv, P>;
  // All weights (embeddings, attention, FFN) in one pool.
  template <Pool P> using Weights = Sentence<P, P, P, Kv, Act>;
  static constexpr Placement kPlacement = [] {
    Placement p;
    p.base = {Emb, Attn, F, Kv, Act};
    return p;
  }();
};
using Default = Sentence<Pool::Vram, Pool::Vram, Pool::Vram, Pool::Vram, Pool::Vram>;
template <Pool P> using Embeddings = Default::Embeddings<P>;
template <Pool P> using Attention = Default::Attention<P>;
template <Pool P> using Ffn = Default::Ffn<P>;
template <Pool P> using KvCache = Default::KvCache<P>;
template <Pool P> using Activations = Default::Activations<P>;
template <Pool P> using Weights = Default::Weights<P>;

// The NPU-offload plan of the design: the first `layers` layers' attention
// weights in NPU SRAM, everything else in Vram.
constexpr Placement npu_attention_first_layers(uint32_t layers) {
  return everything_in(Pool::Vram).with(Group::Attention, Layers{0, layers}, Pool::NpuSram);
}

// A fully custom list, one entry per layer (embeddings and activations in
// `whole_model`); runs of equal entries become one segment each.
template <size_t N>
constexpr Placement per_layer(const std::array<LayerPools, N>& layers,
                              Pool whole_model = Pool::Vram) {
  Placement p = everything_in(whole_model);
  p.base[size_t(Group::Attention)] = p.base[size_t(Group::Ffn)] =
      p.base[size_t(Group::KvCache)] = Pool::Vram;
  const auto runs = [&](Group g, auto pool_of) {
    for (uint32_t first = 0; first < N;) {
      uint32_t last = first + 1;
      while (last < N && pool_of(layers[last]) == pool_of(layers[first])) ++last;
      if (pool_of(layers[first]) != Pool::Vram) p = p.with(g, Layers{first, last}, pool_of(layers[first]));
      first = last;
    }
  };
  runs(Group::Attention, [](const LayerPools& l) { return l.attention; });
  runs(Group::Ffn, [](const LayerPools& l) { return l.ffn; });
  runs(Group::KvCache, [](const LayerPools& l) { return l.kv_cache; });
  return p;
}

}  // namespace placement

// A placement type (the sentence form) or a Placement value, as a value.
template <class P>
concept PlacementType = requires {
  { P::kPlacement } -> std::convertible_to<Placement>;
};

}  // namespace unicorn
