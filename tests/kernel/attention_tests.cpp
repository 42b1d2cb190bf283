// Attention against the CPU reference: attn_prep.comp (the q and k norms, RoPE,
// the key and value written into every cache format), attention.comp,
// attention_tiled.comp and attention_coop.comp over prefill chunks and batched
// decode streams, their tile and workgroup shapes, and attention's WAIT after
// the q, k and v products.
#include "kernel_harness.hpp"

namespace unicorn {
namespace {

// attention_coop against the reference on its own fp16-rounded inputs: what
// remains is the probabilities' fp16 rounding (relative 2^-11 per weight of
// an average); against the exact reference, the inputs' rounding as well.
constexpr double kCoopAttentionTol = 2e-3, kCoopAttentionExactTol = 1e-2;

// A one-token decode step's q, k and v products and its attention with no
// barrier between them (Tuning::decode_attention_wait): the products' workgroups
// count themselves in a counter (SIGNAL) and every attention workgroup waits
// for the count (WAIT) before it reads the projections, then counts itself,
// the last one setting the counter back to 0. Its output and the key and value
// it writes into the cache are bit for bit those behind a barrier, twice in a
// row (so the recorded step runs again), with an F32 and an F16 cache.
TEST(AttentionWait, WaitingAttentionGivesTheBarriersBits) {
  const uint32_t H = 256, heads = 4, kvh = 2, hd = 64, slots = 16, pos = 9, counter = 3;
  const uint32_t qd = heads * hd, kd = kvh * hd, sg = device().ctx.info().subgroup_size;
  const Format wf = Format::Q8_0;
  auto weights = [&](uint32_t rows) {
    auto w = std::make_unique<HostBuffer>(rows * row_bytes(wf, H));
    w->fill<std::byte>(reference::to_device_layout(wf, random_weights(wf, rows, H)));
    return w;
  };
  const auto wq = weights(qd), wk = weights(kd), wv = weights(kd);
  HostBuffer x(H * 4), qw(hd * 4), kw(hd * 4), counters(16 * 4);
  x.fill<float>(random_floats(H));
  qw.fill<float>(random_floats(hd, 0.5f, 1.5f));
  kw.fill<float>(random_floats(hd, 0.5f, 1.5f));
  counters.fill<uint32_t>(std::vector<uint32_t>(16, 0));
  const auto step = step_buffer({1, pos, 0, 0});
  const uint32_t per_group = kernels::kMatVecRows * 128 / 32;
  const uint32_t count = groups(qd, per_group) + 2 * groups(kd, per_group);
  for (Format kv : {Format::F32, Format::F16}) {
    SCOPED_TRACE(format_name(kv));
    const size_t cache_bytes = size_t(kvh) * slots * hd * (kv == Format::F16 ? 2 : 4);
    std::vector<std::byte> cache(cache_bytes);  // earlier positions' keys and values
    const auto values = random_floats(cache_bytes / 2);
    for (size_t i = 0; i < values.size(); ++i) {
      const _Float16 h = static_cast<_Float16>(values[i]);
      if (kv == Format::F16) std::memcpy(cache.data() + 2 * i, &h, 2);
      else if (i < cache_bytes / 4) std::memcpy(cache.data() + 4 * i, &values[i], 4);
    }
    auto run_step = [&](bool waits, HostBuffer& q, HostBuffer& k, HostBuffer& v, HostBuffer& kc, HostBuffer& vc,
                        HostBuffer& o) {
      kc.fill<std::byte>(cache), vc.fill<std::byte>(cache);
      q.poison(), k.poison(), v.poison(), o.poison();
      auto product = [&](const HostBuffer& w, HostBuffer& y, uint32_t rows, bool barrier) {
        return make_dispatch("matvec_q8_0", kernels::kMatVecBindings,
                             kernels::MatVec{H, rows, 0, kernels::kMatVecRows, 32, 1, 0, 1, 1, 1, rows, waits ? 1u : 0u},
                             {&w, &x, &y, &step, &w, &counters}, {0, rows, counter}, {groups(rows, per_group), 1, 1},
                             barrier);
      };
      const uint32_t query_heads = kernels::attention_query_heads(heads, kvh, 1, 2);  // a pair where the group allows
      kernels::Attention spec{heads, kvh, hd, slots, 0, 0.125f, sg, 0, kernels::attention_threads(sg, hd, device().ctx.info().cpu()), 1, 1e4f, 1.f,
                              1e-6f, waits ? 1u : 0u, query_heads};
      run_recorded({product(*wq, q, qd, false), product(*wk, k, kd, false), product(*wv, v, kd, !waits),
                    make_dispatch(variant("attention", kv), kernels::kAttentionBindings, spec,
                                  {&q, &kc, &vc, &o, &step, &k, &v, &qw, &kw, &counters}, {0, kvh, counter, count},
                                  {1, heads / query_heads, 1}, true)});
    };
    HostBuffer q(qd * 4), k(kd * 4), v(kd * 4), kc(cache_bytes), vc(cache_bytes), o(qd * 4);
    run_step(false, q, k, v, kc, vc, o);
    HostBuffer q2(qd * 4), k2(kd * 4), v2(kd * 4), kc2(cache_bytes), vc2(cache_bytes), o2(qd * 4);
    for (int round = 0; round < 2; ++round) {
      run_step(true, q2, k2, v2, kc2, vc2, o2);
      for (uint32_t i = 0; i < qd; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(o2.as<float>()[i]), std::bit_cast<uint32_t>(o.as<float>()[i]))
            << "round " << round << ": o[" << i << "] " << o2.as<float>()[i] << ", behind a barrier "
            << o.as<float>()[i];
      ASSERT_TRUE(std::ranges::equal(kc2.bytes(), kc.bytes())) << "round " << round << ": the key cache differs";
      ASSERT_TRUE(std::ranges::equal(vc2.bytes(), vc.bytes())) << "round " << round << ": the value cache differs";
      ASSERT_FALSE(std::ranges::equal(kc.bytes(), std::span(cache))) << "attention wrote no key";
      for (uint32_t i = 0; i < 16; ++i)
        ASSERT_EQ(counters.as<uint32_t>()[i], 0u) << "round " << round << ": counter " << i << " left set";
    }
  }
}

// ---------------------------------------------------------------- attn_prep

// A KV cache part as raw element bits (f16 in the low half), so contents can be
// checked bit for bit; all ones is the poison an unwritten element holds.
uint32_t kv_bits(const HostBuffer& b, bool f16, size_t i) {
  return f16 ? b.as<uint16_t>()[i] : b.as<uint32_t>()[i];
}
uint32_t to_kv_bits(float x, bool f16) {
  if (f16) {
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
  }
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_kv_bits(uint32_t u, bool f16) {
  if (f16) return reference::half_to_float(uint16_t(u));
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// How far a cache element stored from the float32 value `want` +- `tol` may lie
// from `want`: an f16 cache adds half an f16 ulp (2^-11 relative, 2^-25 in the
// subnormal range).
double kv_tolerance(double want, double tol, bool f16) {
  return tol + (f16 ? (std::abs(want) + tol) * 0x1p-11 + 0x1p-25 : 0.0);
}

struct RopeCase {
  uint32_t hd;
  float theta, scale;
  uint32_t start_pos;
  Format kv = Format::F32;
  uint32_t heads_per_group = 4;  // attn_prep's HEADS_PER_GROUP: 4 for chunks, 1 for decode
  std::string name() const {
    std::ostringstream s;
    s << variant("attn_prep", kv) << " rope heads=4 kv=2 hd=" << hd << " theta=" << theta
      << " scale=" << scale << " start_pos=" << start_pos << " HEADS_PER_GROUP=" << heads_per_group;
    return s.str();
  }
  // theta^(2/hd) a power of two: every inv_freq, and p * inv_freq, is exact in float32.
  bool exact_frequencies() const {
    const double e = std::log2(double(theta)) * 2.0 / hd;
    return e == std::round(e) && std::exp2(std::log2(double(theta))) == double(theta);
  }
};
class Rope : public ::testing::TestWithParam<RopeCase> {};

// RoPE accuracy, through attn_prep: q_norm / k_norm (reference::rmsnorm per
// head), then the rotation; queries checked in place, keys in the cache (slot
// p % SLOTS of a 5-slot ring), values there bit for bit.
// Tolerance. The angle p * inv_freq is float32 by the model's definition, and
// Vulkan's pow() is not correctly rounded: inv_freq may differ from the
// reference's by a few ulp, which at p = 1e5 moves the angle by ~5e-3 rad (one
// float32 ulp of the angle itself is 7.8e-3 there). So at large positions a
// pair may rotate by up to angle * 2^-20 more or less than the reference, and
// the test allows exactly that (times the normalised pair's radius), plus 1e-4
// absolute. Where every inv_freq is a power of two (theta = 2^16, hd = 32;
// theta = 2^64, hd = 128) the angle is exact, and only 1e-4 absolute is
// allowed: that pins the large-angle sin/cos (the shader's Cody-Waite
// reduction) against double precision. The norm's float32 error (~1e-6 of
// values below ~4) is far inside 1e-4; an f16 cache adds half an f16 ulp.
TEST_P(Rope, MatchesReference) {
  const RopeCase& c = GetParam();
  const bool f16 = c.kv == Format::F16;
  const uint32_t heads = 4, kvh = 2, n = 3, slots = 5, half = c.hd / 2;
  const float eps = 1e-6f;
  const size_t q_row = size_t(heads) * c.hd, kv_row = size_t(kvh) * c.hd;
  const auto qs = random_floats(n * q_row, -2.f, 2.f), ks = random_floats(n * kv_row, -2.f, 2.f),
             vs = random_floats(n * kv_row, -2.f, 2.f);
  const auto qw = random_floats(c.hd, 0.5f, 1.5f), kw = random_floats(c.hd, 0.5f, 1.5f);
  // q has a spare row n: it must stay poison (the dispatch covers one token more).
  HostBuffer q((n + 1) * q_row * 4), k(ks.size() * 4), v(vs.size() * 4), qwb(c.hd * 4),
      kwb(c.hd * 4), kc(kv_row * slots * (f16 ? 2 : 4)), vc(kv_row * slots * (f16 ? 2 : 4));
  q.fill<float>(qs);
  k.fill<float>(ks);
  v.fill<float>(vs);
  qwb.fill<float>(qw);
  kwb.fill<float>(kw);
  const auto step = step_buffer({n, c.start_pos, 0, 0});
  // A head's threads must be whole subgroups (kernels::attn_prep_heads_per_group).
  const uint32_t heads_per_group = std::min(c.heads_per_group, 128 / device().ctx.info().subgroup_size);
  run(variant("attn_prep", c.kv), kernels::kAttnPrepBindings,
      kernels::AttnPrep{heads, kvh, c.hd, slots, c.theta, c.scale, eps, heads_per_group},
      {&q, &k, &v, &kc, &vc, &step, &qwb, &kwb}, {0, kvh},
      {n + 1, kernels::attn_prep_groups(heads + kvh, heads_per_group), 1});

  // Checks one [n, nheads * hd] tensor: got(t, e) against norm + rope of `in`.
  auto check = [&](const char* what, std::span<const float> in, std::span<const float> w,
                   uint32_t nheads, auto&& got) {
    const size_t row = size_t(nheads) * c.hd;
    const auto want = reference::norm_rope(in, w, nheads, c.hd, double(eps), c.theta, c.scale,
                                           c.start_pos);
    std::vector<double> normed(in.size());
    reference::rmsnorm(in, w, c.hd, double(eps), false, normed);
    double worst = -1;
    size_t at = 0;
    float got_at = 0;
    for (size_t e = 0; e < want.size(); ++e) {
      const size_t t = e / row, h = e % row / c.hd, i = e % c.hd % half;
      const size_t base = (t * nheads + h) * c.hd;
      const double angle = reference::rope_angle(uint32_t(c.start_pos + t), uint32_t(i), c.hd,
                                                 c.theta, c.scale);
      const double radius = std::hypot(normed[base + i], normed[base + i + half]);
      const double tol =
          1e-4 + (c.exact_frequencies() ? 0.0 : std::abs(angle) * 0x1p-20 * radius);
      const float g = got(t, e % row);
      if (std::isnan(g)) {
        ADD_FAILURE() << c.name() << " " << what << ": (" << t << "," << e % row
                      << ") not written";
        return;
      }
      const double err = std::abs(g - want[e]) / kv_tolerance(want[e], tol, f16 && what[0] == 'k');
      if (err > worst) worst = err, at = e, got_at = g;
    }
    EXPECT_LE(worst, 1.0) << c.name() << " " << what << ": error " << worst
                          << " x tolerance at (" << at / row << "," << at % row << "): got "
                          << got_at << ", want " << want[at];
  };
  check("q", qs, qw, heads, [&](size_t t, size_t e) { return q.as<float>()[t * q_row + e]; });
  // Cache: [kv head][slot][hd]; token t went to slot (start_pos + t) % SLOTS.
  auto cache_index = [&](size_t t, size_t e) {
    return (e / c.hd * slots + (c.start_pos + t) % slots) * c.hd + e % c.hd;
  };
  check("keys", ks, kw, kvh,
        [&](size_t t, size_t e) { return from_kv_bits(kv_bits(kc, f16, cache_index(t, e)), f16); });
  std::set<size_t> written;
  for (size_t t = 0; t < n; ++t)
    for (size_t e = 0; e < kv_row; ++e) {
      const size_t i = cache_index(t, e);
      written.insert(i);
      ASSERT_EQ(kv_bits(vc, f16, i), to_kv_bits(vs[t * kv_row + e], f16))
          << c.name() << ": value (" << t << "," << e << ") in the cache";
    }
  const uint32_t poison = f16 ? 0xffffu : 0xffffffffu;
  for (size_t i = 0; i < kv_row * slots; ++i)
    if (!written.count(i)) {
      ASSERT_EQ(kv_bits(kc, f16, i), poison) << c.name() << ": wrote key cache element " << i;
      ASSERT_EQ(kv_bits(vc, f16, i), poison) << c.name() << ": wrote value cache element " << i;
    }
  for (size_t e = n * q_row; e < (n + 1) * q_row; ++e)
    ASSERT_TRUE(is_poison(q.as<float>()[e])) << c.name() << ": wrote q's spare row";
}

std::vector<RopeCase> rope_cases() {
  std::vector<RopeCase> v;
  for (uint32_t hd : {32u, 256u})
    for (float theta : {1e4f, 1e6f})
      for (float scale : {1.f, 8.f})
        for (uint32_t p : {0u, 100000u}) v.push_back({hd, theta, scale, p});
  for (float scale : {1.f, 8.f}) {
    v.push_back({32, 65536.f, scale, 100000});
    v.push_back({128, 0x1p64f, scale, 100000});
  }
  // An f16 cache at a large position, and Gemma 3's 128k-context end.
  v.push_back({256, 1e6f, 8.f, 100000, Format::F16});
  v.push_back({128, 0x1p64f, 1.f, 100000, Format::F16});
  v.push_back({256, 1e6f, 8.f, 131069});
  // Decode's shape (a head per workgroup, a pair per thread) and two heads a
  // workgroup, on the large angles.
  v.push_back({256, 1e6f, 8.f, 100000, Format::F16, 1});
  v.push_back({128, 0x1p64f, 1.f, 100000, Format::F32, 1});
  v.push_back({32, 65536.f, 8.f, 100000, Format::F32, 1});
  v.push_back({256, 1e6f, 8.f, 131069, Format::F32, 2});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Kernel, Rope, ::testing::ValuesIn(rope_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

// ----------------------------------------------------- attn_prep + attention

struct AttnCase {
  Format kv;  // F16 or F32
  uint32_t heads, kv_heads, hd, window;
  std::vector<uint32_t> chunks;  // token counts of successive steps from position 0
  std::vector<uint32_t> parts = {};  // kv heads per cache part; empty: one per part
  uint32_t index = 0;  // in attention_cases(): which tile shapes it runs
  std::string name() const {
    std::ostringstream s;
    s << "attention_" << lower(format_name(kv)) << " heads=" << heads << " kv=" << kv_heads
      << " hd=" << hd << " WINDOW=" << window;
    if (!parts.empty()) {
      s << " parts=";
      for (uint32_t p : parts) s << p << "_";
    }
    return s.str();
  }
};
class Attention : public ::testing::TestWithParam<AttnCase> {};

// The attention_tiled shapes the device holds for a head dim and cache precision.
std::vector<kernels::AttentionTile> attention_tiled_tiles(uint32_t hd, bool f16) {
  std::vector<kernels::AttentionTile> tiles;
  for (kernels::AttentionTile t : {kernels::AttentionTile{8, 16}, {16, 16}, {16, 32}, {32, 16}, {32, 32}})
    if (kernels::attention_tiled_shape_ok(hd, t) &&
        kernels::attention_tiled_shared_bytes(hd, f16 ? 2 : 4, t) <= device().ctx.info().max_shared_memory)
      tiles.push_back(t);
  return tiles;
}
// attention_coop's shapes where the device has cooperative matrices: the
// engine's pick for this head dim first, then the other shapes that fit.
std::vector<kernels::AttentionTile> attention_coop_tiles(uint32_t hd) {
  const auto& info = device().ctx.info();
  std::vector<kernels::AttentionTile> tiles;
  if (!info.coopmat) return tiles;
  const kernels::AttentionTile pick = kernels::attention_coop_shape(hd, info.coop_m, info.coop_n, info.coop_k,
                                                                    info.subgroup_size, info.max_shared_memory);
  if (pick.rows) tiles.push_back(pick);
  for (kernels::AttentionTile t : {kernels::AttentionTile{16, 16}, {32, 32}, {16, 64}, {64, 16}, {32, 32, 2}, {16, 32, 2},
                                   {16, 64, 2}, {64, 32, 1}})
    if (kernels::attention_coop_shape_ok(hd, info.coop_m, info.coop_n, info.coop_k, info.subgroup_size, t) &&
        kernels::attention_coop_shared_bytes(hd, info.coop_m, info.subgroup_size, t) <= info.max_shared_memory &&
        (t.rows != pick.rows || t.keys != pick.keys || t.split != pick.split))
      tiles.push_back(t);
  return tiles;
}

// A sequence of chunks from position 0: attn_prep then attention per step, per
// cache part (by default one part per kv head, so head_begin > 0 — no query
// groups — is exercised; some cases give a part several heads). Local layers
// get the tightest ring the engine's rule allows (window + longest chunk - 1
// slots), so it wraps several times; global layers hold every position. Each
// attn_prep dispatch covers one token more than the chunk (the Recorder records
// for the longest chunk). After each step: the queries, normed and rotated in
// place, and the keys this step wrote, against reference::norm_rope (keys within
// float32 error plus the cache's rounding); the values, and every cache element
// this step must not touch, bit for bit; the output against reference::attention
// over the whole history of reference queries and keys (normed, rotated,
// rounded to the cache's precision).
TEST_P(Attention, AttnPrepAndAttentionMatchReference) {
  const AttnCase& c = GetParam();
  const bool f16 = c.kv == Format::F16;
  const uint32_t total = std::accumulate(c.chunks.begin(), c.chunks.end(), 0u);
  const uint32_t longest = *std::max_element(c.chunks.begin(), c.chunks.end());
  const uint32_t slots = c.window ? c.window + longest - 1 : total;
  const float scale = 1.0f / std::sqrt(float(c.hd));
  const float theta = c.window ? 1e4f : 1e6f, rope_scale = c.window ? 1.f : 8.f, eps = 1e-6f;
  std::vector<uint32_t> part_heads = c.parts;
  if (part_heads.empty()) part_heads.assign(c.kv_heads, 1);
  ASSERT_EQ(std::accumulate(part_heads.begin(), part_heads.end(), 0u), c.kv_heads);
  const uint32_t parts = uint32_t(part_heads.size());
  std::vector<uint32_t> part_begin(parts, 0);
  for (uint32_t p = 1; p < parts; ++p) part_begin[p] = part_begin[p - 1] + part_heads[p - 1];
  const size_t kv_row = size_t(c.kv_heads) * c.hd, q_row = size_t(c.heads) * c.hd;
  const size_t elem = f16 ? 2 : 4;
  std::vector<HostBuffer> kc, vc;
  std::vector<std::vector<uint32_t>> want_kc, want_vc;  // expected bits; per part [heads][SLOTS][HEAD_DIM]
  const uint32_t poison = f16 ? 0xffffu : 0xffffffffu;
  for (uint32_t p = 0; p < parts; ++p) {
    const size_t cache_elems = size_t(part_heads[p]) * slots * c.hd;
    kc.emplace_back(cache_elems * elem);
    vc.emplace_back(cache_elems * elem);
    want_kc.emplace_back(cache_elems, poison);
    want_vc.emplace_back(cache_elems, poison);
  }
  auto round_kv = [&](float x) { return f16 ? float(static_cast<_Float16>(x)) : x; };
  std::vector<float> k_hist, v_hist;  // [positions, kv_heads * hd], reference, in cache precision
  std::vector<float> k_stored;  // [positions, kv_heads * hd], what attn_prep stored (checked)
  size_t rounded_other_way = 0;
  const auto qw = random_floats(c.hd, 0.5f, 1.5f), kw = random_floats(c.hd, 0.5f, 1.5f);
  HostBuffer qwb(c.hd * 4), kwb(c.hd * 4);
  qwb.fill<float>(qw);
  kwb.fill<float>(kw);
  // attn_prep as the engine records it: four heads a workgroup for a chunk, one for a decode step.
  auto prep_spec = [&](uint32_t n) {
    return kernels::AttnPrep{c.heads, c.kv_heads, c.hd, slots, theta, rope_scale, eps,
                             kernels::attn_prep_heads_per_group(n == 1, device().ctx.info().subgroup_size)};
  };
  // The engine's workgroup for this device (on a CPU device, fewer threads
  // than a GPU's: kernels::attention_threads); on a CPU device HALF_OUT below
  // runs a GPU's, so lavapipe checks both.
  const bool cpu = device().ctx.info().cpu();
  // One query head a workgroup here; HALF_OUT below pairs them where the kv
  // group allows (kernels::attention_query_heads, forced), PREP runs every
  // grouping it allows, each bit for bit the one-head output.
  const kernels::Attention attn_spec{c.heads, c.kv_heads, c.hd, slots, c.window, scale,
                                     device().ctx.info().subgroup_size, 0,
                                     kernels::attention_threads(device().ctx.info().subgroup_size, c.hd, cpu),
                                     0, 0.f, 0.f, 0.f, 0, 1};
  const uint32_t group = c.heads / c.kv_heads, paired_heads = kernels::attention_query_heads(c.heads, c.kv_heads, 1, 2);
  const std::string prep = variant("attn_prep", c.kv),
                    attn = variant("attention", c.kv),
                    tiled = variant("attention_tiled", c.kv);
  const std::vector<kernels::AttentionTile> tiles = attention_tiled_tiles(c.hd, f16);
  ASSERT_FALSE(tiles.empty()) << c.name() << ": no attention_tiled shape fits this device";
  // attention_coop, where the device has cooperative matrices.
  const auto& info = device().ctx.info();
  const std::string coop = variant("attention_coop", c.kv);
  const std::vector<kernels::AttentionTile> coop_tiles = attention_coop_tiles(c.hd);

  double coop_worst = 0;
  uint32_t pos = 0;
  for (uint32_t n : c.chunks) {
    const std::string at = c.name() + " SLOTS=" + std::to_string(slots) +
                           " start_pos=" + std::to_string(pos) + " n=" + std::to_string(n);
    const auto ks = random_floats(n * kv_row, -2.f, 2.f), vs = random_floats(n * kv_row);
    const auto qs = random_floats(n * q_row, -4.f, 4.f);  // [n, heads * hd]
    // q and o have a spare row n: it must stay poison.
    HostBuffer k(ks.size() * 4), v(vs.size() * 4), q((n + 1) * q_row * 4), o((n + 1) * q_row * 4);
    k.fill<float>(ks);
    v.fill<float>(vs);
    q.fill<float>(qs);
    const auto step = step_buffer({n, pos, 0, 0});
    // A decode step also runs attention with PREP (attn_prep's work inside),
    // from the raw projections, on copies of the caches as they are now.
    std::vector<HostBuffer> kc_prep, vc_prep;
    if (n == 1)
      for (uint32_t p = 0; p < parts; ++p) {
        kc_prep.emplace_back(kc[p].bytes().size());
        vc_prep.emplace_back(vc[p].bytes().size());
        std::memcpy(kc_prep[p].bytes().data(), kc[p].bytes().data(), kc[p].bytes().size());
        std::memcpy(vc_prep[p].bytes().data(), vc[p].bytes().data(), vc[p].bytes().size());
      }
    for (uint32_t p = 0; p < parts; ++p)
      run(prep, kernels::kAttnPrepBindings, prep_spec(n),
          {&q, &k, &v, &kc[p], &vc[p], &step, &qwb, &kwb}, {part_begin[p], part_heads[p]},
          {n + 1, kernels::attn_prep_groups((part_begin[p] == 0 ? c.heads : 0) + c.kv_heads,
                                            prep_spec(n).heads_per_group), 1});

    // Queries in place, keys in the cache: within 1e-5 (float32 error of values
    // below ~4) plus the angle's float32 error (angle * 2^-20 * the normed pair's
    // radius, as in the Rope test), plus the cache's rounding for keys.
    const auto q_ref = reference::norm_rope(qs, qw, c.heads, c.hd, double(eps), theta, rope_scale, pos);
    const auto k_ref = reference::norm_rope(ks, kw, c.kv_heads, c.hd, double(eps), theta, rope_scale, pos);
    std::vector<double> q_normed(qs.size()), k_normed(ks.size());
    reference::rmsnorm(qs, qw, c.hd, double(eps), false, q_normed);
    reference::rmsnorm(ks, kw, c.hd, double(eps), false, k_normed);
    auto rope_tol = [&](std::span<const double> normed, size_t t, size_t e) {  // e: [heads * hd]
      const uint32_t half = c.hd / 2, i = uint32_t(e % c.hd % half);
      const size_t base = t * (normed.size() / n) + e / c.hd * c.hd;
      const double angle = reference::rope_angle(pos + uint32_t(t), i, c.hd, theta, rope_scale);
      return 1e-5 + angle * 0x1p-20 * std::hypot(normed[base + i], normed[base + i + half]);
    };
    for (uint32_t t = 0; t < n; ++t)
      for (size_t e = 0; e < q_row; ++e) {
        const float got = q.as<float>()[t * q_row + e];
        ASSERT_LE(std::abs(got - q_ref[t * q_row + e]), rope_tol(q_normed, t, e))
            << at << ": query (" << t << "," << e << ") after attn_prep: got " << got << ", want "
            << q_ref[t * q_row + e];
      }
    for (size_t e = n * q_row; e < (n + 1) * q_row; ++e)
      ASSERT_TRUE(is_poison(q.as<float>()[e])) << at << ": attn_prep wrote q's spare row";
    // The attention reference's keys: the reference's, rounded to the cache's
    // precision. Where an f16 cache element rounded the other way (the float32
    // result and the exact one straddle a rounding boundary: one f16 ulp, a few
    // elements in a thousand) it takes the cache's value, which the check
    // above has pinned to the exact key.
    const size_t hist_begin = k_hist.size();
    k_stored.resize(hist_begin + k_ref.size());
    for (double x : k_ref) k_hist.push_back(round_kv(float(x)));
    for (float x : vs) v_hist.push_back(round_kv(x));
    for (uint32_t t = 0; t < n; ++t)
      for (uint32_t p = 0; p < parts; ++p)
        for (uint32_t h = 0; h < part_heads[p]; ++h)
          for (uint32_t d = 0; d < c.hd; ++d) {
            const size_t i = (size_t(h) * slots + (pos + t) % slots) * c.hd + d;
            const size_t e = t * kv_row + size_t(part_begin[p] + h) * c.hd + d;
            const uint32_t bits = kv_bits(kc[p], f16, i);
            const float got = from_kv_bits(bits, f16);
            ASSERT_LE(std::abs(got - k_ref[e]),
                      kv_tolerance(k_ref[e], rope_tol(k_normed, t, e % kv_row), f16))
                << at << ": key of token " << t << " kv head " << part_begin[p] + h << " d " << d
                << ": got " << got << ", want " << k_ref[e];
            if (f16 && got != k_hist[hist_begin + e]) ++rounded_other_way, k_hist[hist_begin + e] = got;
            k_stored[hist_begin + e] = got;
            want_kc[p][i] = bits;
            want_vc[p][i] = to_kv_bits(vs[e], f16);
          }
    // The caches, whole: this step's values, and nothing else changed.
    for (uint32_t p = 0; p < parts; ++p)
      for (size_t i = 0; i < want_kc[p].size(); ++i) {
        ASSERT_EQ(kv_bits(kc[p], f16, i), want_kc[p][i]) << at << ": key cache part " << p << " element " << i;
        ASSERT_EQ(kv_bits(vc[p], f16, i), want_vc[p][i]) << at << ": value cache part " << p << " element " << i;
      }

    for (uint32_t p = 0; p < parts; ++p)
      run(attn, kernels::kAttentionBindings, attn_spec, {&q, &kc[p], &vc[p], &o, &step},
          {part_begin[p], part_heads[p]}, {n, c.heads, 1});
    std::vector<float> q_ref_f(q_ref.begin(), q_ref.end());
    auto want = reference::attention(q_ref_f, k_hist, v_hist, c.heads, c.kv_heads, c.hd, c.window,
                                     scale, pos);
    want.resize(want.size() + q_row, NAN);  // the spare row stays poison
    ASSERT_TRUE(compare(at, o.as<float>(), want, q_row, 1e-5));
    // HALF_OUT: the same outputs as the output projection's fp16 operand, on
    // every other case (both cache formats, every head dim but 64, windows and
    // parts among them): one pipeline fewer for lavapipe to compile on the
    // others, a second at head dim 256 (notes/build_time.md).
    if (c.index % 2 == 1) {
      auto attn_half = attn_spec;
      attn_half.half_out = 1;
      attn_half.query_heads = paired_heads;
      if (cpu) attn_half.threads = kernels::attention_threads(device().ctx.info().subgroup_size, c.hd, false);
      o.poison();
      for (uint32_t p = 0; p < parts; ++p)
        run(attn, kernels::kAttentionBindings, attn_half, {&q, &kc[p], &vc[p], &o, &step},
            {part_begin[p], part_heads[p]}, {n, c.heads / paired_heads, 1});
      ASSERT_TRUE(compare(at + " HALF_OUT", widen_fp16(o.as<_Float16>(), want.size()), want, q_row, kFp16OutputTol));
      if (paired_heads > 1) {  // and one head a workgroup writes the same fp16 bits (a server's fixed passes pair by rows)
        const std::vector<_Float16> paired(o.as<_Float16>().begin(), o.as<_Float16>().begin() + n * q_row);
        attn_half.query_heads = 1;
        o.poison();
        for (uint32_t p = 0; p < parts; ++p)
          run(attn, kernels::kAttentionBindings, attn_half, {&q, &kc[p], &vc[p], &o, &step},
              {part_begin[p], part_heads[p]}, {n, c.heads, 1});
        for (size_t i = 0; i < paired.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint16_t>(o.as<_Float16>()[i]), std::bit_cast<uint16_t>(paired[i]))
              << at << " HALF_OUT element " << i << ": two query heads a workgroup differ from one";
      }
    }
    if (n == 1) {  // PREP: the same output, and the same key and value in the cache
      HostBuffer q_raw((n + 1) * q_row * 4);
      q_raw.fill<float>(qs);
      auto fused = attn_spec;
      fused.prep = 1, fused.theta = theta, fused.rope_scale = rope_scale, fused.eps = eps;
      std::vector<uint32_t> one_head;  // the output bits with one query head a workgroup
      for (uint32_t query_heads = 1; query_heads <= kernels::kAttentionMaxQueryHeads; query_heads *= 2) {
        if (group % query_heads) continue;
        fused.query_heads = query_heads;
        o.poison();
        for (uint32_t p = 0; p < parts; ++p)
          run(attn, kernels::kAttentionBindings, fused,
              {&q_raw, &kc_prep[p], &vc_prep[p], &o, &step, &k, &v, &qwb, &kwb}, {part_begin[p], part_heads[p]},
              {n, c.heads / query_heads, 1});
        std::vector<uint32_t> bits;
        for (const float x : o.as<float>()) bits.push_back(std::bit_cast<uint32_t>(x));
        if (query_heads == 1) one_head = bits;
        else
          ASSERT_TRUE(std::ranges::equal(bits, one_head)) << at << " PREP: " << query_heads << " query heads a workgroup differ from one";
      }
      ASSERT_TRUE(compare(at + " PREP", o.as<float>(), want, q_row, 1e-5));
      for (uint32_t p = 0; p < parts; ++p)
        for (size_t i = 0; i < want_kc[p].size(); ++i) {
          const float a = from_kv_bits(kv_bits(kc_prep[p], f16, i), f16), b = from_kv_bits(want_kc[p][i], f16);
          if (want_kc[p][i] == poison) {
            ASSERT_EQ(kv_bits(kc_prep[p], f16, i), poison) << at << " PREP: key cache part " << p << " element " << i;
            continue;
          }
          ASSERT_LE(std::abs(a - b), (f16 ? 1e-3f : 1e-6f) * std::max(1.0f, std::abs(b)))
              << at << " PREP: key cache part " << p << " element " << i << ": " << a << " against attn_prep's " << b;
          ASSERT_EQ(kv_bits(vc_prep[p], f16, i), want_vc[p][i]) << at << " PREP: value cache part " << p << " element " << i;
        }
      // q, k and v in partial sums (a batched step's products split over K:
      // QKV_SLICES), added in order: the same output and cache bits as PREP
      // on their sums. The slices lie apart by strides unlike a row's, the
      // q's unlike the k's and v's. (After the checks above: these runs
      // rewrite the token's cache slot with the sums' key and value.)
      {
        constexpr uint32_t kSlices = 3;
        const uint32_t q_slice = 2 * q_row + 3, kv_slice = 3 * kv_row + 5;
        auto split = [&](const std::vector<float>& whole, uint32_t slice, std::vector<float>& sums) {
          std::vector<float> pieces(size_t(kSlices) * slice, std::numeric_limits<float>::quiet_NaN());
          const auto r0 = random_floats(whole.size(), -1.f, 1.f), r1 = random_floats(whole.size(), -1.f, 1.f);
          sums.resize(whole.size());
          for (size_t i = 0; i < whole.size(); ++i) {
            pieces[i] = r0[i], pieces[slice + i] = r1[i], pieces[2 * slice + i] = whole[i] - r0[i] - r1[i];
            sums[i] = (pieces[i] + pieces[slice + i]) + pieces[2 * slice + i];
          }
          return pieces;
        };
        std::vector<float> q_sum, k_sum, v_sum;
        const auto q_parts = split(std::vector<float>(qs.begin(), qs.begin() + q_row), q_slice, q_sum);
        const auto k_parts = split(ks, kv_slice, k_sum), v_parts = split(vs, kv_slice, v_sum);
        HostBuffer q_split(q_parts.size() * 4), k_split(k_parts.size() * 4), v_split(v_parts.size() * 4);
        q_split.fill<float>(q_parts), k_split.fill<float>(k_parts), v_split.fill<float>(v_parts);
        HostBuffer q_whole(q_row * 4), k_whole(k_sum.size() * 4), v_whole(v_sum.size() * 4);
        q_whole.fill<float>(q_sum), k_whole.fill<float>(k_sum), v_whole.fill<float>(v_sum);
        auto sliced = fused;
        sliced.query_heads = 1;
        auto bits_of = [&](const kernels::Attention& spec, HostBuffer& qb, HostBuffer& kb, HostBuffer& vb) {
          o.poison();
          for (uint32_t p = 0; p < parts; ++p)
            run(attn, kernels::kAttentionBindings, spec, {&qb, &kc_prep[p], &vc_prep[p], &o, &step, &kb, &vb, &qwb, &kwb},
                {part_begin[p], part_heads[p]}, {n, c.heads, 1});
          std::vector<uint32_t> bits;
          for (const float x : o.as<float>()) bits.push_back(std::bit_cast<uint32_t>(x));
          for (uint32_t p = 0; p < parts; ++p)
            for (size_t i = 0; i < want_kc[p].size(); ++i)
              bits.push_back(kv_bits(kc_prep[p], f16, i)), bits.push_back(kv_bits(vc_prep[p], f16, i));
          return bits;
        };
        const auto whole_bits = bits_of(sliced, q_whole, k_whole, v_whole);
        sliced.qkv_slices = kSlices, sliced.q_slice = q_slice, sliced.kv_slice = kv_slice;
        ASSERT_TRUE(std::ranges::equal(bits_of(sliced, q_split, k_split, v_split), whole_bits))
            << at << " PREP: q, k and v in " << kSlices << " partial sums differ from their sums";
      }
    }
    // The tiled kernel on the same step (dispatched for one token more than the
    // chunk, as the Recorder does for its longest chunk: the spare row's tile
    // must write nothing), in two of the tile shapes the device holds, taken in
    // turn by case, the second with HALF_OUT: every shape and both outputs run
    // on several cases. (Every shape on every case was ten pipelines a case
    // for lavapipe to compile, half of this suite's time on a fresh machine:
    // notes/build_time.md.)
    for (const uint32_t half_out : {0u, 1u}) {
      const kernels::AttentionTile tile = tiles[(c.index + half_out) % tiles.size()];
      o.poison();
      const kernels::AttentionTiled spec{c.heads, c.kv_heads, c.hd, slots, c.window, scale,
                                         tile.rows, tile.keys, half_out};
      for (uint32_t p = 0; p < parts; ++p)
        run(tiled, kernels::kAttentionTiledBindings, spec, {&q, &kc[p], &vc[p], &o, &step},
            {part_begin[p], part_heads[p]}, {groups((n + 1) * (c.heads / c.kv_heads), tile.rows), part_heads[p], 1});
      const std::string what = at + " " + tiled + " rows=" + std::to_string(tile.rows) +
                               " keys=" + std::to_string(tile.keys);
      ASSERT_TRUE(half_out ? compare(what + " HALF_OUT", widen_fp16(o.as<_Float16>(), want.size()), want,
                                     q_row, kFp16OutputTol)
                           : compare(what, o.as<float>(), want, q_row, 1e-5));
    }
    // The tensor-unit kernel rounds the scaled queries, the keys, the values
    // and the probabilities to fp16: against the reference with the same
    // inputs rounded (all but the probabilities' rounding, relative 2^-11 per
    // weight of an average), and against the exact one at fp16 input error.
    if (!coop_tiles.empty()) {
      std::vector<float> q16(q_ref.size()), k16(k_hist.size()), v16(v_hist.size());
      std::transform(q_ref.begin(), q_ref.end(), q16.begin(), [&](double x) { return round_f16(float(x) * scale); });
      std::transform(k_hist.begin(), k_hist.end(), k16.begin(), round_f16);
      std::transform(v_hist.begin(), v_hist.end(), v16.begin(), round_f16);
      auto want16 = reference::attention(q16, k16, v16, c.heads, c.kv_heads, c.hd, c.window, 1.0f, pos);
      want16.resize(want16.size() + q_row, NAN);
      for (const kernels::AttentionTile tile : coop_tiles)
        for (uint32_t variant = 0; variant < 3; ++variant) {  // fp32 out; fp16 out; row tiles in pairs
          const uint32_t half_out = variant == 1, pairs = variant == 2;
          o.poison();
          const kernels::AttentionCoop spec{c.heads, c.kv_heads, c.hd, slots, c.window, scale,
                                            tile.rows, tile.keys, half_out, info.coop_m, info.coop_n,
                                            info.coop_k, info.subgroup_size,
                                            kernels::attention_coop_threads(tile, info.coop_m, info.subgroup_size), pairs,
                                            tile.split};
          const uint32_t row_tiles = groups((n + 1) * (c.heads / c.kv_heads), tile.rows);
          for (uint32_t p = 0; p < parts; ++p)
            run(coop, kernels::kAttentionCoopBindings, spec, {&q, &kc[p], &vc[p], &o, &step},
                {part_begin[p], part_heads[p]}, {pairs ? groups(row_tiles, 2) : row_tiles, part_heads[p], 1});
          const std::string what = at + " " + coop + " rows=" + std::to_string(tile.rows) +
                                   " keys=" + std::to_string(tile.keys) + " split=" + std::to_string(tile.split) +
                                   (half_out ? " HALF_OUT" : "") + (pairs ? " PAIRS" : "");
          const auto got = half_out ? widen_fp16(o.as<_Float16>(), want.size())
                                    : std::vector<float>(o.as<float>().begin(), o.as<float>().end());
          ASSERT_TRUE(compare(what, got, want16, q_row, kCoopAttentionTol + (half_out ? kFp16OutputTol : 0)));
          ASSERT_TRUE(compare(what + " vs exact", got, want, q_row, kCoopAttentionExactTol));
          coop_worst = std::max(coop_worst, max_rel_err(got, want16, want16));
        }
    }
    pos += n;
  }
  if (!coop_tiles.empty()) std::printf("[ attention_coop ] %s: max rel err %.2e vs fp16-rounded inputs\n", c.name().c_str(), coop_worst);
  EXPECT_LE(rounded_other_way, k_hist.size() / 100) << c.name() << ": f16 keys rounded the other way";

  // The caches: slot s holds the latest position p with p % SLOTS == s, bit for bit.
  for (uint32_t p = 0; p < parts; ++p)
    for (uint32_t h = 0; h < part_heads[p]; ++h)
      for (uint32_t s = 0; s < std::min(slots, total); ++s) {
        const uint32_t last = (total - 1 - s) / slots * slots + s;
        for (uint32_t d = 0; d < c.hd; ++d) {
          const size_t i = (size_t(h) * slots + s) * c.hd + d;
          const size_t e = size_t(last) * kv_row + size_t(part_begin[p] + h) * c.hd + d;
          ASSERT_EQ(from_kv_bits(kv_bits(vc[p], f16, i), f16), v_hist[e])
              << prep << " kv head " << part_begin[p] + h << " slot " << s << " d " << d;
          ASSERT_EQ(from_kv_bits(kv_bits(kc[p], f16, i), f16), k_stored[e])
              << prep << " key, kv head " << part_begin[p] + h << " slot " << s << " d " << d;
        }
      }
}

// The tile the engine picks: 8 rows for a small model's chunk, 16 for a large
// one (more where small heads need them); as many keys as fit (an f16 cache
// fits twice the keys); fewer rows or keys on a device with less shared memory
// (lavapipe: 32 KiB); none where no tile fits (Vulkan's minimum, 16 KiB, with
// 256-dim heads), so attention.comp serves prefill too.
TEST(AttentionTiledShape, FollowsTheChunkAndTheDevice) {
  using kernels::AttentionTile;
  auto same = [](AttentionTile a, AttentionTile b) { return a.rows == b.rows && a.keys == b.keys; };
  EXPECT_EQ(kernels::attention_tiled_rows(512, 4), 8u);    // 1B: 128 workgroups of 16 rows
  EXPECT_EQ(kernels::attention_tiled_rows(512, 32), 16u);  // 27B
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 2, 49152, 8), {8, 32}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 2, 49152, 16), {16, 32}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 4, 49152, 16), {16, 16}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(128, 2, 49152, 16), {16, 32}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 2, 32768, 16), {16, 16}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 4, 32768, 16), {8, 16}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(32, 4, 32768, 8), {16, 32}));  // the tiny model
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 4, 16384, 16), {}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 2, 49152, 0), {}));  // UNICORN_ATTENTION_ROWS=0
  for (uint32_t hd : {32u, 64u, 96u, 128u, 256u})
    for (uint32_t rows : {8u, 16u, 32u}) {
      const AttentionTile t = kernels::attention_tiled_shape(hd, 2, 49152, rows);
      EXPECT_TRUE(!t.rows || kernels::attention_tiled_shape_ok(hd, t)) << "hd=" << hd << " rows=" << rows;
    }
}

// attention_coop's tile: the most rows x keys that fit (on a tie more rows),
// in whole subgroups of the matrix's rows; 64 x 32 for the 27B's 128-dim
// heads in 48 KiB, 48 x 16 for 256-dim heads; none where no tile fits.
// attn_prep: four heads a workgroup for a chunk, one for a decode step; a
// head's threads stay whole subgroups (two heads with 64-lane subgroups).
TEST(AttnPrepShape, HeadsPerWorkgroup) {
  EXPECT_EQ(kernels::attn_prep_heads_per_group(false, 32), 4u);
  EXPECT_EQ(kernels::attn_prep_heads_per_group(false, 8), 4u);
  EXPECT_EQ(kernels::attn_prep_heads_per_group(false, 64), 2u);
  EXPECT_EQ(kernels::attn_prep_heads_per_group(false, 128), 1u);
  EXPECT_EQ(kernels::attn_prep_heads_per_group(true, 32), 1u);
  EXPECT_EQ(kernels::attn_prep_groups(32 + 16, 4), 12u);  // 27B: query and kv heads of a token
  EXPECT_EQ(kernels::attn_prep_groups(4 + 1, 4), 2u);
}

TEST(AttentionCoopShape, MostRowsTimesKeysThatFit) {
  auto same = [](kernels::AttentionTile a, kernels::AttentionTile b) {
    return a.rows == b.rows && a.keys == b.keys && a.split == b.split;
  };
  // The 27B's 128-dim heads: 64 rows x 32 keys, two subgroups per 16 rows;
  // 256-dim heads: 48 x 16, one (16 keys do not split in two 16-key matrices).
  EXPECT_TRUE(same(kernels::attention_coop_shape(128, 16, 16, 16, 32, 49152), {64, 32, 2}));
  EXPECT_TRUE(same(kernels::attention_coop_shape(128, 16, 16, 16, 32, 49152, 64, 64, 1), {64, 32, 1}));
  EXPECT_TRUE(same(kernels::attention_coop_shape(256, 16, 16, 16, 32, 49152), {48, 16, 1}));
  EXPECT_TRUE(same(kernels::attention_coop_shape(128, 16, 16, 16, 32, 65536), {64, 48, 1}));  // 48 keys: 24 a subgroup
  EXPECT_TRUE(same(kernels::attention_coop_shape(256, 16, 16, 16, 32, 16384), {}));
  // Row tiles in pairs where one each would be more workgroups than a wave:
  // the 27B's pp512 (16 row tiles x 16 kv heads), not the 4B's (22 x 4).
  EXPECT_TRUE(kernels::attention_coop_pairs(16 * 16, 132));
  EXPECT_FALSE(kernels::attention_coop_pairs(22 * 4, 132));
  // 64-lane subgroups (RDNA3 wave64): twice the partial maxima.
  EXPECT_TRUE(same(kernels::attention_coop_shape(128, 16, 16, 16, 64, 49152), {64, 32, 2}));
  EXPECT_EQ(kernels::attention_coop_shared_bytes(128, 16, 64, {64, 32, 1}),
            kernels::attention_coop_shared_bytes(128, 16, 32, {64, 32, 1}) + 4 * 4 * 32);
  // Not a whole number of matrices, more named accumulators than the kernel
  // has, a split of 16 keys, or probabilities that overflow the key tile.
  EXPECT_FALSE(kernels::attention_coop_shape_ok(120, 16, 16, 16, 32, {64, 32}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(512, 16, 16, 16, 32, {16, 16}));
  EXPECT_TRUE(kernels::attention_coop_shape_ok(512, 16, 16, 16, 32, {16, 32, 2}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(128, 16, 16, 16, 32, {64, 80}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(128, 16, 16, 16, 32, {40, 32}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(128, 16, 16, 16, 32, {64, 16, 2}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(16, 16, 16, 16, 32, {64, 32, 2}));
  for (uint32_t hd : {32u, 64u, 96u, 128u, 256u})
    for (uint32_t bytes : {16384u, 32768u, 49152u, 65536u}) {
      const kernels::AttentionTile t = kernels::attention_coop_shape(hd, 16, 16, 16, 32, bytes);
      EXPECT_TRUE(!t.rows || (kernels::attention_coop_shape_ok(hd, 16, 16, 16, 32, t) &&
                              kernels::attention_coop_shared_bytes(hd, 16, 32, t) <= bytes))
          << "hd=" << hd << " bytes=" << bytes;
    }
}

std::vector<AttnCase> attention_cases() {
  // 97 positions: prefill chunks, decode steps, more than one 64-key tile.
  const std::vector<uint32_t> chunks = {20, 1, 13, 1, 1, 30, 5, 1, 25};
  // Four factors of two levels each (cache format, window, query groups, head
  // dim) in half of their 16 combinations: those with an even count of second
  // levels. Each pair of factors still meets in all four of its combinations
  // (a 2^(4-1) design of resolution IV), and each case is seven pipelines for
  // lavapipe to compile on a fresh machine, 4.5 s at head dim 256
  // (notes/build_time.md).
  std::vector<AttnCase> v;
  for (Format kv : {Format::F16, Format::F32})
    for (uint32_t window : {0u, 24u})
      for (auto [h, kvh] : {std::pair{4u, 2u}, std::pair{8u, 1u}})
        for (uint32_t hd : {32u, 256u}) {
          const int second_levels = (kv == Format::F32) + (window != 0) + (h == 8) + (hd == 256);
          if (second_levels % 2 == 0) v.push_back({kv, h, kvh, hd, window, chunks});
        }
  // Prefill chunks of many row tiles, with query groups of 2 (27B's) and 4
  // (1B's): the ring of a local layer wraps inside a chunk, and a chunk starts
  // mid-prompt with keys before it in the cache. Cache format and window
  // crossed, the shape the parity of the two, so each factor pair meets in
  // all its combinations.
  const std::vector<uint32_t> long_chunks = {70, 1, 45, 3};
  for (Format kv : {Format::F16, Format::F32})
    for (uint32_t window : {0u, 40u}) {
      if ((kv == Format::F32) == (window != 0))
        v.push_back({kv, 4, 2, 128, window, long_chunks});
      else
        v.push_back({kv, 4, 1, 256, window, long_chunks});
    }
  // A window wider than a tile, and a head_dim that is no multiple of 64.
  v.push_back({Format::F16, 4, 2, 96, 70, chunks});
  v.push_back({Format::F32, 4, 2, 96, 0, chunks});
  // Cache parts of several kv heads: the second starts at head 1 (no query groups).
  v.push_back({Format::F16, 8, 4, 64, 24, chunks, {1, 3}});
  v.push_back({Format::F32, 8, 4, 256, 0, chunks, {3, 1}});
  v.push_back({Format::F32, 8, 4, 32, 24, chunks, {4}});
  for (size_t i = 0; i < v.size(); ++i) v[i].index = uint32_t(i);
  return v;
}
INSTANTIATE_TEST_SUITE_P(Kernel, Attention, ::testing::ValuesIn(attention_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

// A batched decode step: three rows of three streams, each at its own position,
// over a cache of 3 streams x 2 kv heads = 6 rows in two parts, [0, 4) and
// [4, 6) (a part boundary inside stream 1). attn_prep writes each row's key
// and value into its own stream's rows at slot pos % SLOTS and nothing else
// (every other element bit for bit unchanged); attention reads each row's own
// stream up to its own position: against reference::attention over that
// stream's cache, with the kernel's rotated queries and stored keys as inputs.
TEST(AttentionStreams, EachRowItsOwnStreamAndPosition) {
  const uint32_t heads = 4, kvh = 2, hd = 32, slots = 16;
  const std::vector<detail::StepRow> rows = {{0, 7, 2}, {0, 3, 0}, {0, 12, 1}};
  const uint32_t n = uint32_t(rows.size()), q_row = heads * hd, kv_row = kvh * hd;
  const uint32_t part_begin[] = {0, 4}, part_rows[] = {4, 2};
  const float scale = 1.0f / std::sqrt(float(hd)), theta = 1e4f, eps = 1e-6f;
  std::vector<std::vector<float>> k_old, v_old;
  std::vector<HostBuffer> kc, vc;
  for (uint32_t p = 0; p < 2; ++p) {
    const size_t elems = size_t(part_rows[p]) * slots * hd;
    k_old.push_back(random_floats(elems, -2.f, 2.f));
    v_old.push_back(random_floats(elems));
    kc.emplace_back(elems * 4);
    vc.emplace_back(elems * 4);
    kc[p].fill<float>(k_old[p]);
    vc[p].fill<float>(v_old[p]);
  }
  const auto qs = random_floats(n * q_row, -4.f, 4.f), ks = random_floats(n * kv_row, -2.f, 2.f),
             vs = random_floats(n * kv_row);
  const auto qw = random_floats(hd, 0.5f, 1.5f), kw = random_floats(hd, 0.5f, 1.5f);
  HostBuffer q(qs.size() * 4), k(ks.size() * 4), v(vs.size() * 4), o(qs.size() * 4), qwb(hd * 4), kwb(hd * 4);
  q.fill<float>(qs);
  k.fill<float>(ks);
  v.fill<float>(vs);
  qwb.fill<float>(qw);
  kwb.fill<float>(kw);
  const auto step = step_buffer(rows);
  const std::string prep = variant("attn_prep", Format::F32), attn = variant("attention", Format::F32);
  for (uint32_t p = 0; p < 2; ++p)
    run(prep, kernels::kAttnPrepBindings, kernels::AttnPrep{heads, kvh, hd, slots, theta, 1.f, eps, 1},
        {&q, &k, &v, &kc[p], &vc[p], &step, &qwb, &kwb}, {part_begin[p], part_rows[p]},
        {n, kernels::attn_prep_groups((part_begin[p] == 0 ? heads : 0) + kvh, 1), 1});

  // The caches: element (cache row R, slot, d), R = stream * kvh + kv head.
  auto at = [&](uint32_t R, uint32_t slot, uint32_t d) {
    const uint32_t p = R < part_begin[1] ? 0 : 1;
    return (size_t(R - part_begin[p]) * slots + slot) * hd + d;
  };
  auto part_of = [&](uint32_t R) { return R < part_begin[1] ? 0u : 1u; };
  for (uint32_t R = 0; R < 6; ++R)
    for (uint32_t slot = 0; slot < slots; ++slot) {
      const uint32_t stream = R / kvh, h = R % kvh, p = part_of(R);
      const auto row = std::find_if(rows.begin(), rows.end(), [&](const detail::StepRow& r) {
        return r.stream == stream && r.pos % slots == slot;
      });
      const uint32_t t = uint32_t(row - rows.begin());
      const auto k_ref = row == rows.end() ? std::vector<double>{}
                         : reference::norm_rope(std::span(ks).subspan(t * kv_row, kv_row), kw, kvh, hd,
                                                double(eps), theta, 1.f, row->pos);
      for (uint32_t d = 0; d < hd; ++d) {
        const size_t i = at(R, slot, d);
        const float got_k = kc[p].as<float>()[i], got_v = vc[p].as<float>()[i];
        if (row == rows.end()) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got_k), std::bit_cast<uint32_t>(k_old[p][i]))
              << "attn_prep wrote key row " << R << " slot " << slot << ", no step row's";
          ASSERT_EQ(std::bit_cast<uint32_t>(got_v), std::bit_cast<uint32_t>(v_old[p][i]))
              << "attn_prep wrote value row " << R << " slot " << slot << ", no step row's";
        } else {
          ASSERT_NEAR(got_k, k_ref[h * hd + d], 1e-4) << "key of step row " << t << " kv head " << h;
          ASSERT_EQ(got_v, vs[t * kv_row + h * hd + d]) << "value of step row " << t << " kv head " << h;
        }
      }
    }

  // One query head a workgroup, then two (a kv group's both): the same bits.
  std::vector<float> one_head;
  for (uint32_t query_heads : {1u, 2u}) {
    for (uint32_t p = 0; p < 2; ++p)
      run(attn, kernels::kAttentionBindings,
          kernels::Attention{heads, kvh, hd, slots, 0, scale, device().ctx.info().subgroup_size, 0,
                             kernels::attention_threads(device().ctx.info().subgroup_size, hd,
                                                        device().ctx.info().cpu()),
                             0, 0.f, 0.f, 0.f, 0, query_heads},
          {&q, &kc[p], &vc[p], &o, &step}, {part_begin[p], part_rows[p]}, {n, heads / query_heads, 1});
    if (query_heads == 1) {
      one_head.assign(o.as<float>().begin(), o.as<float>().end());
      std::ranges::fill(o.as<float>(), 0.f);
      continue;
    }
    for (size_t i = 0; i < one_head.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(o.as<float>()[i]), std::bit_cast<uint32_t>(one_head[i]))
          << "attention output " << i << ": two query heads a workgroup differ from one";
  }
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t pos = rows[t].pos;
    std::vector<float> k_hist, v_hist;  // [pos + 1, kvh * hd] of the row's stream (slot = position)
    for (uint32_t j = 0; j <= pos; ++j)
      for (uint32_t h = 0; h < kvh; ++h)
        for (uint32_t d = 0; d < hd; ++d) {
          const uint32_t R = rows[t].stream * kvh + h;
          k_hist.push_back(kc[part_of(R)].as<float>()[at(R, j, d)]);
          v_hist.push_back(vc[part_of(R)].as<float>()[at(R, j, d)]);
        }
    const auto q_t = q.as<float>().subspan(t * q_row, q_row);
    const auto want = reference::attention(q_t, k_hist, v_hist, heads, kvh, hd, 0, scale, pos);
    ASSERT_TRUE(compare("attention, step row " + std::to_string(t) + " (stream " +
                            std::to_string(rows[t].stream) + ", position " + std::to_string(pos) + ")",
                        o.as<float>().subspan(t * q_row, q_row), want, q_row, 1e-5));
  }
}


// A prefill chunk of several streams' segments (EngineCore::prefill of
// several prompt chunks): each segment starts at a multiple of the tile's
// tokens and the rows between segments repeat the previous segment's last
// row, as the engine lays them out. Every row's output must be bit for bit
// what its segment gives as a chunk of its own, in every tile shape of
// attention_tiled and (with tensor units) attention_coop, with row tiles in
// pairs, on a global and a sliding-window layer over a ring that wraps.
TEST(AttentionStreams, ChunkOfSeveralStreamsMatchesEachAlone) {
  const auto& info = device().ctx.info();
  const uint32_t heads = 4, kvh = 2, G = heads / kvh, hd = 64, streams = 3, q_row = heads * hd;
  const float scale = 1.0f / std::sqrt(float(hd));
  struct Segment {
    uint32_t stream, pos, n;
  };
  const Segment segments[] = {{2, 5, 11}, {0, 40, 7}, {1, 0, 9}};
  std::vector<std::vector<float>> qs;  // per segment [n, heads * hd]
  for (const Segment& g : segments) qs.push_back(random_floats(size_t(g.n) * q_row, -4.f, 4.f));
  const std::string tiled = variant("attention_tiled", Format::F16),
                    coop = variant("attention_coop", Format::F16);
  for (uint32_t window : {0u, 16u}) {
    const uint32_t slots = window ? window + 32 : 64, cache_rows = streams * kvh;
    const size_t cache_elems = size_t(cache_rows) * slots * hd;
    std::vector<_Float16> k16(cache_elems), v16(cache_elems);
    const auto kf = random_floats(cache_elems, -2.f, 2.f), vf = random_floats(cache_elems);
    std::transform(kf.begin(), kf.end(), k16.begin(), [](float x) { return _Float16(x); });
    std::transform(vf.begin(), vf.end(), v16.begin(), [](float x) { return _Float16(x); });
    HostBuffer kc(cache_elems * 2), vc(cache_elems * 2);
    kc.fill<_Float16>(k16);
    vc.fill<_Float16>(v16);
    // One dispatch of `module` over `rows` with queries `q`: the outputs [rows, heads * hd].
    const auto attend = [&](const std::string& module, uint32_t bindings, const auto& spec, uint32_t tile_rows,
                            bool pairs, std::span<const detail::StepRow> rows, const std::vector<float>& q) {
      const uint32_t n = uint32_t(rows.size());
      HostBuffer qb(q.size() * 4), o(q.size() * 4);
      qb.fill<float>(q);
      const auto step = step_buffer(rows);
      const uint32_t row_tiles = groups(n * G, tile_rows);
      run(module, bindings, spec, {&qb, &kc, &vc, &o, &step}, {0, cache_rows},
          {pairs ? groups(row_tiles, 2) : row_tiles, cache_rows, 1});
      return std::vector<float>(o.as<float>().begin(), o.as<float>().begin() + q.size());
    };
    const auto check = [&](const std::string& what, const std::string& module, uint32_t bindings, const auto& spec,
                           uint32_t tile_rows, bool pairs) {
      const uint32_t align = std::lcm(tile_rows, G) / G;
      std::vector<detail::StepRow> joint;
      std::vector<float> joint_q;
      std::vector<size_t> begin;
      for (size_t s = 0; s < std::size(segments); ++s) {
        while (joint.size() % align) {  // twins of the previous segment's last row
          joint.push_back(joint.back());
          joint_q.insert(joint_q.end(), joint_q.end() - q_row, joint_q.end());
        }
        begin.push_back(joint.size());
        const Segment& g = segments[s];
        for (uint32_t t = 0; t < g.n; ++t) joint.push_back({0, g.pos + t, g.stream, 0});
        joint_q.insert(joint_q.end(), qs[s].begin(), qs[s].end());
      }
      const auto together = attend(module, bindings, spec, tile_rows, pairs, joint, joint_q);
      for (size_t s = 0; s < std::size(segments); ++s) {
        const Segment& g = segments[s];
        std::vector<detail::StepRow> own;
        for (uint32_t t = 0; t < g.n; ++t) own.push_back({0, g.pos + t, g.stream, 0});
        const auto alone = attend(module, bindings, spec, tile_rows, pairs, own, qs[s]);
        for (uint32_t t = 0; t < g.n; ++t) {
          const float* a = alone.data() + size_t(t) * q_row;
          const float* b = together.data() + (begin[s] + t) * q_row;
          ASSERT_TRUE(std::all_of(a, a + q_row, [](float x) { return std::isfinite(x); }))
              << what << " window " << window << ": segment " << s << " alone left row " << t << " unwritten";
          ASSERT_EQ(std::memcmp(a, b, q_row * 4), 0)
              << what << " window " << window << ": stream " << g.stream << " position " << g.pos + t
              << " differs in a chunk of three streams (segments aligned to " << align << " tokens)";
        }
      }
    };
    const auto tiles = attention_tiled_tiles(hd, true);
    ASSERT_FALSE(tiles.empty());
    for (const kernels::AttentionTile t : tiles)
      check(tiled + " rows=" + std::to_string(t.rows) + " keys=" + std::to_string(t.keys), tiled,
            kernels::kAttentionTiledBindings,
            kernels::AttentionTiled{heads, kvh, hd, slots, window, scale, t.rows, t.keys, 0}, t.rows, false);
    for (const kernels::AttentionTile t : attention_coop_tiles(hd))
      for (uint32_t pairs : {0u, 1u})
        check(coop + " rows=" + std::to_string(t.rows) + " keys=" + std::to_string(t.keys) + " split=" +
                  std::to_string(t.split) + (pairs ? " PAIRS" : ""),
              coop, kernels::kAttentionCoopBindings,
              kernels::AttentionCoop{heads, kvh, hd, slots, window, scale, t.rows, t.keys, 0, info.coop_m,
                                     info.coop_n, info.coop_k, info.subgroup_size,
                                     kernels::attention_coop_threads(t, info.coop_m, info.subgroup_size), pairs,
                                     t.split},
              t.rows, pairs != 0);
  }
}

}  // namespace
}  // namespace unicorn
