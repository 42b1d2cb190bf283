#version 450
#extension GL_GOOGLE_include_directive : require
// sample — choose the next token of each logits row on the GPU; only its id
// goes back to the host. In Hugging Face's order: repetition penalty (applied
// by logits_max.comp, which runs first and leaves each slice's maximum in
// `partials`), then temperature, top-k, top-p, min-p, and a draw from what is
// left. Temperature 0 is greedy (ties go to the lowest id, as torch.argmax)
// and reads only the partial maxima. Thresholds are on the order-preserving
// integer image of the float logits: top-k's by radix selection, so it keeps
// exactly the k largest (and their ties), top-p's by bisection (over the few
// logits top-k keeps, where it cuts); the draw uses a counter-
// based generator (seed, the stream's step, stream), so the same seed gives the same
// tokens, whichever row of a batch a stream's logits land in.
// Dispatch: (logit rows, 1, 1), after logits_max; rows past logit_count exit.
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint VOCAB = 1;
layout(constant_id = 1) const uint PARTS = 1;  // logits_max workgroups per row
const uint THREADS = 256;
const uint SPAN = (VOCAB + THREADS - 1) / THREADS;  // contiguous logits per thread

layout(binding = 0) readonly buffer LogitsBuf { float logits[]; };  // [rows, VOCAB], penalised
layout(binding = 4) readonly buffer Partials { vec2 partials[]; };  // [rows, PARTS]: (max, index bits)
layout(binding = 1) writeonly buffer OutBuf { uint chosen[]; };  // [rows]
#define SAMPLER_BINDING 2
#include "include/sampler.glsl"

shared float red_f[THREADS];
shared uint red_u[THREADS];
// The logits a top-k cut keeps (with ties; more go the whole-row way).
const uint MAX_CANDIDATES = 1024;
shared uint cand_key[MAX_CANDIDATES];
shared float cand_w[MAX_CANDIDATES];
shared uint cand_id[MAX_CANDIDATES];
shared uint kept_count, kth_bound;

// Monotonic map float -> uint (larger float, larger uint), and back.
uint order_key(float f) {
  const uint b = floatBitsToUint(f);
  return (b & 0x80000000u) != 0 ? ~b : b | 0x80000000u;
}
float from_key(uint k) {
  return uintBitsToFloat((k & 0x80000000u) != 0 ? k & 0x7fffffffu : ~k);
}

float sum_all(float v) {
  red_f[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = THREADS / 2; s > 0; s >>= 1) {
    if (gl_LocalInvocationID.x < s) red_f[gl_LocalInvocationID.x] += red_f[gl_LocalInvocationID.x + s];
    barrier();
  }
  const float r = red_f[0];
  barrier();
  return r;
}
uint count_all(uint v) {
  red_u[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = THREADS / 2; s > 0; s >>= 1) {
    if (gl_LocalInvocationID.x < s) red_u[gl_LocalInvocationID.x] += red_u[gl_LocalInvocationID.x + s];
    barrier();
  }
  const uint r = red_u[0];
  barrier();
  return r;
}

// This thread's start in the running sum of the threads' values before it;
// the total is left in red_u[0] (as float bits).
float exclusive_prefix(float v) {
  red_f[gl_LocalInvocationID.x] = v;
  barrier();
  if (gl_LocalInvocationID.x == 0) {
    float run = 0.0;
    for (uint i = 0; i < THREADS; ++i) { const float x = red_f[i]; red_f[i] = run; run += x; }
    red_u[0] = floatBitsToUint(run);
  }
  barrier();
  return red_f[gl_LocalInvocationID.x];
}

// PCG hash: a 32-bit random value from (seed, counter, row).
uint pcg(uint v) {
  const uint state = v * 747796405u + 2891336453u;
  const uint word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

// How many logits of the row (this thread: [lo, hi)) have keys at or above
// `key`; each thread's start among them, in index order, is left in red_u.
uint count_at_or_above(uint base, uint lo, uint hi, uint key) {
  uint n = 0u;
  for (uint i = lo; i < hi; ++i) n += order_key(logits[base + i]) >= key ? 1u : 0u;
  red_u[gl_LocalInvocationID.x] = n;
  barrier();
  if (gl_LocalInvocationID.x == 0) {  // exclusive prefix over the threads' counts
    uint run = 0u;
    for (uint i = 0; i < THREADS; ++i) { const uint v = red_u[i]; red_u[i] = run; run += v; }
    kept_count = run;
  }
  barrier();
  return kept_count;
}

// After count_at_or_above(key) found at most MAX_CANDIDATES: those logits'
// keys, weights exp((l - m) / T) and ids into shared memory, in index order.
void gather(uint base, uint lo, uint hi, uint key, float m, float inv_t) {
  uint at = red_u[gl_LocalInvocationID.x];
  for (uint i = lo; i < hi; ++i) {
    const float l = logits[base + i];
    if (order_key(l) < key) continue;
    cand_key[at] = order_key(l);
    cand_w[at] = exp((l - m) * inv_t);
    cand_id[at] = i;
    ++at;
  }
  barrier();
}

// The k-th largest key (the largest key with at least k keys at or above it)
// by radix selection: a byte per pass, from a histogram (red_u) of the keys
// that share the bytes chosen so far. Of the row, or of the n candidates.
uint kth_key(uint base, uint lo, uint hi, uint n, bool candidates, uint k) {
  uint prefix = 0u, prefix_mask = 0u, want = k;
  const uint tid = gl_LocalInvocationID.x;
  const uint per = (n + THREADS - 1) / THREADS, c_lo = min(tid * per, n), c_hi = min(c_lo + per, n);
  for (int shift = 24; shift >= 0; shift -= 8) {
    red_u[tid] = 0u;
    barrier();
    const uint from = candidates ? c_lo : lo, to = candidates ? c_hi : hi;
    for (uint i = from; i < to; ++i) {
      const uint key = candidates ? cand_key[i] : order_key(logits[base + i]);
      if ((key & prefix_mask) == prefix) atomicAdd(red_u[(key >> uint(shift)) & 255u], 1u);
    }
    barrier();
    if (tid == 0) {  // from the top byte value down, until `want` keys are at or above it
      uint above = 0u, b = 255u;
      while (above + red_u[b] < want) above += red_u[b--];
      red_u[0] = b;
      red_u[1] = above;
    }
    barrier();
    prefix |= red_u[0] << uint(shift);
    prefix_mask |= 255u << uint(shift);
    want -= red_u[1];
    barrier();
  }
  return prefix;
}
uint kth_row_key(uint base, uint lo, uint hi, uint k) { return kth_key(base, lo, hi, 0u, false, k); }
uint kth_candidate_key(uint n, uint k) { return kth_key(0u, 0u, 0u, n, true, k); }

// Logit i of the thread's walk: candidate i (gather()) or the row's logit i.
uint key_of(bool candidates, uint base, uint i) { return candidates ? cand_key[i] : order_key(logits[base + i]); }
float weight_of(bool candidates, uint base, uint i, float m, float inv_t) {
  return candidates ? cand_w[i] : exp((logits[base + i] - m) * inv_t);
}
// The weights exp((l - m) / T) of [from, to) whose keys are at or above `key`.
float mass_at_or_above(bool candidates, uint base, uint from, uint to, uint key, float m, float inv_t) {
  float mass = 0.0;
  for (uint i = from; i < to; ++i)
    if (key_of(candidates, base, i) >= key) mass += weight_of(candidates, base, i, m, inv_t);
  return mass;
}

// u in [0, 1): the draw's random value for this row's stream and step.
float uniform_draw(uint row) {
  const uint draw = pcg(sampling[row].seed ^ pcg(sampling[row].counter ^ pcg(sampling[row].key)));
  return float(draw >> 8) * (1.0 / 16777216.0);
}

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  if (row >= logit_count) return;
  const float temperature = sampling[row].temperature, top_p = sampling[row].top_p;
  const float min_p = sampling[row].min_p;
  const uint top_k = sampling[row].top_k;
  const uint base = row * VOCAB, lo = tid * SPAN, hi = min(VOCAB, lo + SPAN);

  // Largest logit, and its lowest index, from logits_max's partial results.
  float best = -1.0 / 0.0;
  uint best_id = 0xffffffffu;
  for (uint p = tid; p < PARTS; p += THREADS) {
    const vec2 part = partials[row * PARTS + p];
    const uint id = floatBitsToUint(part.y);
    if (part.x > best || (part.x == best && id < best_id)) { best = part.x; best_id = id; }
  }
  red_f[tid] = best;
  red_u[tid] = best_id;
  barrier();
  for (uint s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) {
      const float ov = red_f[tid + s];
      const uint oi = red_u[tid + s];
      if (ov > red_f[tid] || (ov == red_f[tid] && oi < red_u[tid])) { red_f[tid] = ov; red_u[tid] = oi; }
    }
    barrier();
  }
  const float m = red_f[0];
  const uint argmax = red_u[0];
  barrier();
  if (temperature <= 0.0 || !(m > -1.0 / 0.0)) {
    if (tid == 0) chosen[row] = argmax;
    return;
  }
  const float inv_t = 1.0 / temperature;

  // Threshold on the logit: keep l >= cut.
  uint cut = 0u;
  // Candidates in shared memory (see gather()): top-p's bisection and the
  // draw walk them instead of the whole row, each of whose rounds is a pass
  // of exp over the vocabulary.
  bool gathered = false;
  uint n_cand = 0u;
  if (top_k > 0 && top_k < VOCAB) {
    // A lower bound on the top-k cut first: the k-th largest of the slices'
    // maxima (those are k distinct logits, so the k-th largest logit is at or
    // above it). Few logits reach it: the exact cut is chosen among those.
    uint bound = 0u;
    if (top_k <= PARTS && PARTS <= THREADS) {
      red_u[tid] = tid < PARTS ? order_key(partials[row * PARTS + tid].x) : 0u;
      barrier();
      if (tid < PARTS) {  // this slice's rank among the slices (ties by slice)
        const uint mine = red_u[tid];
        uint above = 0u;
        for (uint j = 0; j < PARTS; ++j) {
          const uint other = red_u[j];
          above += other > mine || (other == mine && j < tid) ? 1u : 0u;
        }
        if (above == top_k - 1u) kth_bound = mine;
      }
      barrier();
      bound = kth_bound;
    }
    if (bound > 0u) {
      n_cand = count_at_or_above(base, lo, hi, bound);
      if (n_cand <= MAX_CANDIDATES) {
        gather(base, lo, hi, bound, m, inv_t);
        gathered = true;
        cut = kth_candidate_key(n_cand, top_k);
      }
    }
    if (!gathered) cut = kth_row_key(base, lo, hi, top_k);
  }
  if (!gathered && cut > 0u) {
    n_cand = count_at_or_above(base, lo, hi, cut);
    if (n_cand <= MAX_CANDIDATES) {
      gather(base, lo, hi, cut, m, inv_t);
      gathered = true;
    }
  }
  // The logits this thread walks: its run of the candidates, or of the whole
  // row (no top-k, or more ties at its cut than shared memory holds).
  const uint per = (n_cand + THREADS - 1) / THREADS;
  const uint from = gathered ? min(tid * per, n_cand) : lo;
  const uint to = gathered ? min(from + per, n_cand) : hi;
  // top-p: the largest key whose kept mass reaches top_p of the mass above `cut`.
  if (top_p < 1.0) {
    const float total = sum_all(mass_at_or_above(gathered, base, from, to, cut, m, inv_t));
    uint lo_p = cut, hi_p = order_key(m);
    while (lo_p < hi_p) {
      const uint mid = lo_p + (hi_p - lo_p + 1u) / 2u;
      if (sum_all(mass_at_or_above(gathered, base, from, to, mid, m, inv_t)) >= top_p * total) lo_p = mid;
      else hi_p = mid - 1u;
    }
    cut = lo_p;
  }
  // min-p: p >= min_p * p(most likely), i.e. l >= m + T * ln(min_p).
  if (min_p > 0.0) cut = max(cut, order_key(m + log(min_p) * temperature));

  // Draw: u in [0, kept mass); find the token where the running sum passes u.
  const float mine = mass_at_or_above(gathered, base, from, to, cut, m, inv_t);
  const float start = exclusive_prefix(mine);
  const float total_kept = uintBitsToFloat(red_u[0]);
  const float u = uniform_draw(row) * total_kept;
  if (u >= start && u < start + mine) {
    float run = start;
    uint pick = argmax;
    for (uint i = from; i < to; ++i) {
      if (key_of(gathered, base, i) < cut) continue;
      pick = gathered ? cand_id[i] : i;
      run += weight_of(gathered, base, i, m, inv_t);
      if (run > u) break;
    }
    chosen[row] = pick;
  } else if (tid == 0 && !(u < total_kept)) {
    chosen[row] = argmax;  // rounding left u at the very end: the most likely token
  }
}
