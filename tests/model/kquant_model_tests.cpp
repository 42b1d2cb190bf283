// Label golden: the K-quants (Q2_K to Q6_K), ggml's older 32-element
// formats (Q4_1, Q5_0, Q5_1) and IQ4_NL, IQ4_XS end to end on the Vulkan device. A random Gemma 3
// of kGemma3TinyK's shapes (rows whole 256-element superblocks) is written
// twice from one F32 file (unicorn-convert --random): every matrix in the
// format (tools::quantize_k's valid blocks; ggml's reference quantizer for the
// 32-element formats), and every matrix as those blocks' exact dequantisation
// in F32 (ggml's definition, tools/ggml_quantize.hpp). Q4_K_M runs also on
// kGemma3TinyKFallback (hidden 160: llama-quantize's Q5_0 / Q8_0 fallbacks,
// as in the 1B's and 270M's files); safetensors quantized to Q5_0 / Q5_1 at
// load must equal unicorn-convert's file bit for bit.
// The quantized engine must give the F32 engine's logits within 1e-3 of their
// scale (the F32 engine is itself held to transformers in model_tests) in the
// prefill and decode passes, and the same greedy tokens: the whole model's
// reading of the format, not only each kernel's.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <unistd.h>

#include "../tools/ggml_quantize.hpp"
#include "temp_dir.hpp"
#include "../tools/tuning_env.hpp"
#include "unicorn/engine.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/gguf_writer.hpp"

namespace fs = std::filesystem;
using namespace unicorn;

namespace {

template <Format F, const ModelDims& M = kGemma3TinyK>
struct TinyK {
  static constexpr DeploymentConfig kConfig = make_deployment(M, schemes::all(F, Format::F32), 256, 16);
};

gpu::Context& context() {
  static gpu::Context ctx(tools::device_from_env());
  return ctx;
}

fs::path temp_dir() {
  static const unicorn::test::TempDir dir("unicorn-kquant-tests");
  return dir.path();
}

// The random F32 model of `model`'s shapes, once per process.
fs::path base_model(const std::string& model = "gemma3-tiny-k") {
  const fs::path out = temp_dir() / (model + "-f32.gguf");
  if (!fs::exists(out)) {
    const char* convert = std::getenv("UNICORN_CONVERT");
    if (!convert) throw std::runtime_error("UNICORN_CONVERT is not set (run through ctest)");
    const std::string cmd = std::string(convert) + " --random " + model + " --type F32 --seed 7 --out " +
                            out.string() + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }
  return out;
}

// The base model with every matrix in `f` (K-quant blocks), and the same
// blocks dequantised to F32: {quantized file, dequantized file}. `edit`, if
// given, changes a tensor's K-quant bytes (ggml's blocks) before they are written.
using TensorEdit = std::function<void(const std::string& name, std::vector<std::byte>& blocks)>;
// `mix`, if given: each matrix's format by name (a mixed scheme's), else `f` for all.
using Formats = std::map<std::string, Format>;
std::pair<fs::path, fs::path> model_pair(Format f, const TensorEdit& edit = {}, const std::string& tag = "",
                                         const Formats* mix = nullptr, const std::string& model = "gemma3-tiny-k") {
  const auto g = io::GgufFile::open(base_model(model));
  io::GgufWriter q, d;
  for (const auto& kv : g.metadata()) {
    q.set(kv.key, kv.value);
    d.set(kv.key, kv.value);
  }
  std::vector<std::vector<std::byte>> qb(g.tensors().size()), db(g.tensors().size());
  for (size_t i = 0; i < g.tensors().size(); ++i) {
    const auto& t = g.tensors()[i];
    const auto x = tools::dequantize(Format::F32, t.data, t.n_elements);
    const bool matrix = t.dims.size() == 2;  // norms stay F32
    const Format tf = matrix && mix ? mix->at(t.name) : f;
    if (matrix) {
      tools::quantize(tf, x, qb[i]);
      if (edit) edit(t.name, qb[i]);
      tools::quantize(Format::F32, tools::dequantize(tf, qb[i], t.n_elements), db[i]);
    } else {
      qb[i].assign(t.data.begin(), t.data.end());
      db[i] = qb[i];
    }
    q.add_tensor(t.name, uint32_t(matrix ? tf : Format::F32), t.dims, qb[i]);
    d.add_tensor(t.name, uint32_t(Format::F32), t.dims, db[i]);
  }
  const std::string name(format_name(f));
  const fs::path qp = temp_dir() / (model + "-" + name + tag + ".gguf"),
                 dp = temp_dir() / (model + "-" + name + tag + "-dequant.gguf");
  q.write(qp);
  d.write(dp);
  return {qp, dp};
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return diff / scale;
}

struct Run {
  std::vector<float> prefill, decode;  // [tokens, vocab], the two passes' logits
  std::vector<int32_t> greedy;         // prefill's token, then decode steps'
  bool int_dot = false;                // some products took their inputs as bytes (matvec_dot)
};
template <class D>
Run run(const fs::path& model, std::span<const int32_t> prompt,
        const EngineOptions& options = tools::engine_options_from_env()) {
  Engine<D> engine(context(), options);
  engine.load(model);
  EXPECT_NO_THROW(engine.check_tensors()) << model;  // no NaN or Inf among the f16 scales
  Run r;
  r.int_dot = engine.core().int_dot();
  r.prefill = engine.forward_logits(prompt);
  engine.reset();
  r.decode = engine.core().forward_logits(prompt, detail::EngineCore::Pass::Decode);
  engine.reset();
  r.greedy.push_back(engine.prefill(prompt));
  while (r.greedy.size() < 32) r.greedy.push_back(engine.decode(r.greedy.back()));
  return r;
}

// Tensor-unit prefill rounds weights and activations to fp16 (model_tests.cpp's
// kCoopPrefillTolerance); the matrix-vector decode and lavapipe's prefill are fp32.
constexpr double kTolerance = 1e-3, kCoopPrefillTolerance = 4e-3;
// Matrix-vector products on integer dot products round each block of 32
// inputs to bytes (model_tests.cpp's kIntDotPrefillTolerance and
// kIntDotDecodeTolerance: the LM head in prefill, every product in decode;
// on a CPU device prefill's products are decode's kernel, and its tolerance).
constexpr double kIntDotPrefillTolerance = 1e-2, kIntDotDecodeTolerance = 3e-2;

// `got` (a quantized engine) against `want` (the F32 engine on the exact
// dequantisation of the same blocks): both passes' logits within their
// tolerances, and the same greedy tokens. Not the tokens where products took
// their inputs as bytes (got.int_dot): that moves a random model's logits by
// ~1e-2 of their scale, more than its top two tokens' margin at some steps,
// and the greedy paths may part (the Q4_K_M fallback mix at its seventh token
// on the H200); the teacher-forced logits are the check there.
void expect_close(const Run& got, const Run& want, const std::string& what) {
  const double e_prefill = relative_error(got.prefill, want.prefill), e_decode = relative_error(got.decode, want.decode);
  const double prefill_tolerance = std::max(context().info().coopmat ? kCoopPrefillTolerance : kTolerance,
                                            got.int_dot ? (context().info().cpu() ? kIntDotDecodeTolerance
                                                                                   : kIntDotPrefillTolerance)
                                                        : 0.0);
  const double decode_tolerance = got.int_dot ? kIntDotDecodeTolerance : kTolerance;
  std::printf("[ quant ] %-5s vs its F32 dequantisation: prefill %.2e (tolerance %.0e, %s)  decode %.2e (tolerance %.0e%s)\n",
              what.c_str(), e_prefill, prefill_tolerance, gpu::prefill_linear_path(context().info()).c_str(), e_decode,
              decode_tolerance, got.int_dot ? ", integer dot products" : "");
  EXPECT_LE(e_prefill, prefill_tolerance) << what << " prefill pass";
  EXPECT_LE(e_decode, decode_tolerance) << what << " decode pass";
  EXPECT_GT(e_decode, 0.0) << what << ": bit for bit the F32 engine's logits: did the quantized engine run?";
  if (!got.int_dot) EXPECT_EQ(got.greedy, want.greedy) << what << " greedy continuation";
}

template <Format F>
void expect_matches_dequantized(const EngineOptions& options = tools::engine_options_from_env()) {
  const auto [quantized, dequantized] = model_pair(F);
  std::vector<int32_t> prompt(24);  // two 16-token chunks; the 16-position window wraps
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % kGemma3TinyK.vocab);
  expect_close(run<TinyK<F>>(quantized, prompt, options), run<TinyK<Format::F32>>(dequantized, prompt),
               std::string(format_name(F)));
}

class KQuantModel : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(context().validation_errors(), 0u) << "Vulkan validation errors"; }
};

}  // namespace

TEST_F(KQuantModel, Q4_KMatchesItsDequantization) { expect_matches_dequantized<Format::Q4_K>(); }
TEST_F(KQuantModel, Q5_KMatchesItsDequantization) { expect_matches_dequantized<Format::Q5_K>(); }
TEST_F(KQuantModel, Q6_KMatchesItsDequantization) { expect_matches_dequantized<Format::Q6_K>(); }
TEST_F(KQuantModel, Q4_1MatchesItsDequantization) { expect_matches_dequantized<Format::Q4_1>(); }
TEST_F(KQuantModel, Q5_0MatchesItsDequantization) { expect_matches_dequantized<Format::Q5_0>(); }
TEST_F(KQuantModel, Q5_1MatchesItsDequantization) { expect_matches_dequantized<Format::Q5_1>(); }
TEST_F(KQuantModel, Q2_KMatchesItsDequantization) { expect_matches_dequantized<Format::Q2_K>(); }
TEST_F(KQuantModel, Q3_KMatchesItsDequantization) { expect_matches_dequantized<Format::Q3_K>(); }
TEST_F(KQuantModel, IQ4_NLMatchesItsDequantization) { expect_matches_dequantized<Format::IQ4_NL>(); }
TEST_F(KQuantModel, IQ4_XSMatchesItsDequantization) { expect_matches_dequantized<Format::IQ4_XS>(); }

// llama-quantize's Q4_K_M mix (schemes::kQ4_K_M): Q4_K, with Q6_K for attn_v
// and ffn_down in the layers more_bits_layer() picks (here layer 1 of 2) and a
// Q6_K embedding, so one pass reads both formats, and its LM head Q6_K.
template <const Scheme& S, const ModelDims& M = kGemma3TinyK>
struct TinyKMixOf {
  static constexpr Scheme kScheme = [] {
    Scheme s = S;
    s.kv_cache = Format::F32;
    return s;
  }();
  static constexpr DeploymentConfig kConfig = make_deployment(M, kScheme, 256, 16);
};
using TinyKMix = TinyKMixOf<schemes::kQ4_K_M>;

// Each matrix's format in deployment D, by GGUF name.
template <class D>
Formats formats_of() {
  Formats mix;
  for (const TensorSlot& t : kLayoutOf<D>.view().tensors)
    if (t.arena == Arena::Weights && t.rows > 1) mix[t.gguf_name()] = t.format;
  return mix;
}

// The mix's engine against an F32 engine on the exact dequantisation of the
// same blocks (`model`: the random base model's shapes; `options`: the mix's engine's).
template <class D, const ModelDims& M>
void expect_mix_matches(const Formats& mix, const std::string& what, const std::string& model,
                        const EngineOptions& options = tools::engine_options_from_env()) {
  const auto [quantized, dequantized] = model_pair(Format::Q4_K, {}, "-mix-" + what, &mix, model);
  std::vector<int32_t> prompt(24);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % M.vocab);
  expect_close(run<D>(quantized, prompt, options), run<TinyK<Format::F32, M>>(dequantized, prompt), what);
}

TEST_F(KQuantModel, Q4_K_MMixMatchesItsDequantization) {
  const Formats mix = formats_of<TinyKMix>();
  ASSERT_EQ(mix.at("blk.0.attn_v.weight"), Format::Q4_K);
  ASSERT_EQ(mix.at("blk.1.attn_v.weight"), Format::Q6_K);
  ASSERT_EQ(mix.at("blk.1.ffn_down.weight"), Format::Q6_K);
  ASSERT_EQ(mix.at("token_embd.weight"), Format::Q6_K);
  expect_mix_matches<TinyKMix, kGemma3TinyK>(mix, "Q4_K_M", "gemma3-tiny-k");
}

// Q5_K_M: the same rule over Q5_K.
TEST_F(KQuantModel, Q5_K_MMixMatchesItsDequantization) {
  using TinyQ5KMix = TinyKMixOf<schemes::kQ5_K_M>;
  const Formats mix = formats_of<TinyQ5KMix>();
  ASSERT_EQ(mix.at("blk.0.attn_v.weight"), Format::Q5_K);
  ASSERT_EQ(mix.at("blk.1.ffn_down.weight"), Format::Q6_K);
  ASSERT_EQ(mix.at("token_embd.weight"), Format::Q6_K);
  expect_mix_matches<TinyQ5KMix, kGemma3TinyK>(mix, "Q5_K_M", "gemma3-tiny-k");
}

// The same mixes where the hidden state's rows (160) are not whole
// superblocks, as in the 1B's and 270M's files: llama-quantize's fallbacks
// (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0) for the matrices that read it,
// K-quants for attn_output (256 columns) and ffn_down (512). One pass reads
// four formats. (Q5_K_M's file is checked by ConvertWritesTheFallbacks; Q5_1
// and Q5_K run end to end on their own above.)
using TinyFallbackQ4_K_M = TinyKMixOf<schemes::kQ4_K_M, kGemma3TinyKFallback>;
using TinyFallbackQ5_K_M = TinyKMixOf<schemes::kQ5_K_M, kGemma3TinyKFallback>;
TEST_F(KQuantModel, Q4_K_MFallbacksMatchTheirDequantization) {
  const Formats mix = formats_of<TinyFallbackQ4_K_M>();
  for (const char* t : {"attn_q", "attn_k", "ffn_gate", "ffn_up"})
    for (int l : {0, 1}) ASSERT_EQ(mix.at("blk." + std::to_string(l) + "." + t + ".weight"), Format::Q5_0) << t;
  ASSERT_EQ(mix.at("blk.0.attn_v.weight"), Format::Q5_0);
  ASSERT_EQ(mix.at("blk.1.attn_v.weight"), Format::Q8_0);
  ASSERT_EQ(mix.at("blk.0.attn_output.weight"), Format::Q4_K);
  ASSERT_EQ(mix.at("blk.0.ffn_down.weight"), Format::Q4_K);
  ASSERT_EQ(mix.at("blk.1.ffn_down.weight"), Format::Q6_K);
  ASSERT_EQ(mix.at("token_embd.weight"), Format::Q8_0);
  expect_mix_matches<TinyFallbackQ4_K_M, kGemma3TinyKFallback>(mix, "Q4_K_M-fallback", "gemma3-tiny-k-fallback");
}

// llama-quantize's Q3_K_M mix: Q3_K, with Q4_K for attn_output, attn_v and
// ffn_down, and Q5_K for attn_v in the first 2 layers (here both) and ffn_down
// in the first sixteenth (here none): four formats in one pass.
using TinyQ3KMix = TinyKMixOf<schemes::kQ3_K_M>;
TEST_F(KQuantModel, Q3_K_MMixMatchesItsDequantization) {
  const Formats mix = formats_of<TinyQ3KMix>();
  ASSERT_EQ(mix.at("blk.0.attn_q.weight"), Format::Q3_K);
  ASSERT_EQ(mix.at("blk.1.attn_v.weight"), Format::Q5_K);
  ASSERT_EQ(mix.at("blk.0.attn_output.weight"), Format::Q4_K);
  ASSERT_EQ(mix.at("blk.1.ffn_down.weight"), Format::Q4_K);
  ASSERT_EQ(mix.at("blk.1.ffn_up.weight"), Format::Q3_K);
  ASSERT_EQ(mix.at("token_embd.weight"), Format::Q6_K);
  expect_mix_matches<TinyQ3KMix, kGemma3TinyK>(mix, "Q3_K_M", "gemma3-tiny-k");
}

// llama-quantize's IQ4_XS mix where the hidden state's rows are not whole
// superblocks (the 1B's and 270M's files): IQ4_NL for the matrices that read
// it, IQ4_XS for attn_output and ffn_down, the embedding's Q6_K at Q8_0.
using TinyFallbackIQ4_XS = TinyKMixOf<schemes::kIQ4_XS, kGemma3TinyKFallback>;
TEST_F(KQuantModel, IQ4_XSFallbacksMatchTheirDequantization) {
  const Formats mix = formats_of<TinyFallbackIQ4_XS>();
  for (const char* t : {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"})
    for (int l : {0, 1}) ASSERT_EQ(mix.at("blk." + std::to_string(l) + "." + t + ".weight"), Format::IQ4_NL) << t;
  for (int l : {0, 1}) {
    ASSERT_EQ(mix.at("blk." + std::to_string(l) + ".attn_output.weight"), Format::IQ4_XS);
    ASSERT_EQ(mix.at("blk." + std::to_string(l) + ".ffn_down.weight"), Format::IQ4_XS);
  }
  ASSERT_EQ(mix.at("token_embd.weight"), Format::Q8_0);
  expect_mix_matches<TinyFallbackIQ4_XS, kGemma3TinyKFallback>(mix, "IQ4_XS-fallback", "gemma3-tiny-k-fallback");
}

// A tied embedding is held in the file's format (Scheme::takes_embedding):
// llama-quantize's Q4_0 files keep token_embd at Q6_K (Q8_0 where rows are not
// whole superblocks), Google's QAT files at F16. One Q4_0 engine runs each,
// against the F32 engine on its exact dequantisation; and one engine loads
// them all in turn, laid out again for each (EngineCore::hold_embedding_as),
// with the logits of an engine that loaded only that file, bit for bit.
TEST_F(KQuantModel, TheEmbeddingIsHeldInTheFilesFormat) {
  using Q4_0Engine = TinyK<Format::Q4_0>;
  std::vector<int32_t> prompt(24);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % kGemma3TinyK.vocab);
  Engine<Q4_0Engine> reused(context(), tools::engine_options_from_env());
  const uint64_t q4_0_bytes = reused.core().layout().weight(Role::Embedding).bytes;
  for (Format embedding : {Format::Q6_K, Format::Q8_0, Format::F16, Format::Q4_0, Format::Q6_K}) {
    const std::string name(format_name(embedding));
    Formats mix = formats_of<Q4_0Engine>();
    mix["token_embd.weight"] = embedding;
    const auto [quantized, dequantized] = model_pair(Format::Q4_0, {}, "-embedding-" + name, &mix);
    const ::Run fresh = run<Q4_0Engine>(quantized, prompt);
    expect_close(fresh, run<TinyK<Format::F32>>(dequantized, prompt), "Q4_0, " + name + " embedding");

    reused.load(quantized);
    EXPECT_EQ(reused.config().scheme.embedding, embedding);
    EXPECT_EQ(reused.config().scheme.lm_head, embedding) << "the LM head reads the embedding";
    const TensorSlot& held = reused.core().layout().weight(Role::Embedding);
    EXPECT_EQ(held.format, embedding);
    EXPECT_EQ(held.bytes, held.rows * row_bytes(embedding, held.cols));
    if (embedding != Format::Q4_0) EXPECT_NE(held.bytes, q4_0_bytes);
    EXPECT_EQ(reused.forward_logits(prompt), fresh.prefill) << name << ": the reused engine's logits";
    reused.reset();
    EXPECT_EQ(reused.prefill(prompt), fresh.greedy[0]) << name;
    reused.reset();
  }
  // An engine whose LM head is its own copy holds only its own embedding.
  EXPECT_FALSE(schemes::kQ4_0_QAT_Q8Head.takes_embedding(Format::Q6_K));
  EXPECT_TRUE(schemes::kQ4_0_QAT.takes_embedding(Format::Q6_K));
}

// An embedding format whose layout does not fit the device: the error says by
// how much, and the engine keeps its own layout and passes. Gemma 3 1B's F16
// matrices with a Q4_0 embedding fit lavapipe's 2 GiB heap; with an F32
// embedding (1.2 GB) they do not. (A device with room holds it.)
struct OneBF16 {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3_1B, schemes::kF16.with_embedding(Format::Q4_0), 256, 64);
};
TEST_F(KQuantModel, AnEmbeddingThatDoesNotFitLeavesTheEngineAsItWas) {
  Engine<OneBF16> engine(context(), tools::engine_options_from_env());
  const std::vector<int32_t> prompt{2, 10, 20};
  try {
    engine.core().hold_embedding_as(Format::F32);
    std::printf("[ fit   ] %s holds 1B's F32 embedding\n", context().info().name.c_str());
    EXPECT_EQ(engine.layout().weight(Role::Embedding).format, Format::F32);
  } catch (const Error& e) {
    std::printf("[ fit   ] %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
    EXPECT_EQ(engine.config().scheme.embedding, Format::Q4_0);
    EXPECT_EQ(engine.layout().weight(Role::Embedding).format, Format::Q4_0);
  }
  EXPECT_EQ(engine.forward_logits(prompt).size(), prompt.size() * kGemma3_1B.vocab) << "the passes are recorded";
}

// Block-format products on integer dot products (matvec_dot: decode's, and
// the LM head in either pass), as a device that runs them in hardware takes
// them: the Q4_K_M mix (Q4_K, Q6_K, its Q6_K head), the two fallback mixes
// (Q5_0, Q5_1, Q8_0 beside Q4_K, Q5_K, Q6_K), the IQ4_XS fallback mix (IQ4_NL
// beside IQ4_XS), the Q3_K_M mix, and all-Q2_K and all-Q4_1 engines: every
// block format but Q4_0 (model_tests). Lavapipe emulates them, so the test
// asks for them (Tuning::IntDot::WhereSupported).
TEST_F(KQuantModel, MixesOnIntegerDotProducts) {
  if (!context().info().int_dot) GTEST_SKIP() << "no VK_KHR_shader_integer_dot_product";
  EngineOptions o = tools::engine_options_from_env();
  o.tuning.matvec_int_dot = Tuning::IntDot::WhereSupported;
  {
    Engine<TinyFallbackQ5_K_M> engine(context(), o);
    ASSERT_TRUE(engine.core().int_dot()) << "the Q5_K_M engine keeps the float kernels";
  }
  expect_mix_matches<TinyKMix, kGemma3TinyK>(formats_of<TinyKMix>(), "Q4_K_M-int-dot", "gemma3-tiny-k", o);
  expect_mix_matches<TinyFallbackQ4_K_M, kGemma3TinyKFallback>(formats_of<TinyFallbackQ4_K_M>(),
                                                               "Q4_K_M-fallback-int-dot", "gemma3-tiny-k-fallback", o);
  expect_mix_matches<TinyFallbackQ5_K_M, kGemma3TinyKFallback>(formats_of<TinyFallbackQ5_K_M>(),
                                                               "Q5_K_M-fallback-int-dot", "gemma3-tiny-k-fallback", o);
  expect_mix_matches<TinyFallbackIQ4_XS, kGemma3TinyKFallback>(formats_of<TinyFallbackIQ4_XS>(),
                                                               "IQ4_XS-fallback-int-dot", "gemma3-tiny-k-fallback", o);
  expect_mix_matches<TinyQ3KMix, kGemma3TinyK>(formats_of<TinyQ3KMix>(), "Q3_K_M-int-dot", "gemma3-tiny-k", o);
  expect_matches_dequantized<Format::Q2_K>(o);
  expect_matches_dequantized<Format::Q4_1>(o);
}

// unicorn-convert --type Q4_K_M writes every tensor in the format the Q4_K_M
// engine's layout gives it, llama-quantize's rule: such a file loads, and a
// Q4_K file does not (its layer-1 attn_v is Q4_K where the mix says Q6_K).
// unicorn-convert --random `model` --type `type`: every tensor in the format
// deployment D's layout gives it, general.file_type `ftype`; the file loads
// into D and its scales are finite.
template <class D>
fs::path expect_convert_writes(const std::string& model, const std::string& type, uint32_t ftype) {
  std::string name = model + "-" + type + "-convert.gguf";
  std::replace(name.begin(), name.end(), ' ', '_');  // "Q5_0 --pure"
  const fs::path out = temp_dir() / name;
  const std::string cmd = std::string(std::getenv("UNICORN_CONVERT")) + " --random " + model + " --type " + type +
                          " --out " + out.string() + " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto g = io::GgufFile::open(out);
  for (const TensorSlot& t : kLayoutOf<D>.view().tensors) {
    if (t.arena != Arena::Weights) continue;
    const io::GgufTensor* f = g.find_tensor(t.gguf_name());
    EXPECT_TRUE(f) << t.gguf_name();
    if (f) EXPECT_EQ(f->ggml_type, t.rows > 1 ? uint32_t(t.format) : uint32_t(Format::F32)) << t.gguf_name();
  }
  EXPECT_EQ(g.try_u32("general.file_type"), ftype) << "llama.cpp's LLAMA_FTYPE for " << type;
  Engine<D> engine(context(), tools::engine_options_from_env());
  engine.load(out);
  EXPECT_NO_THROW(engine.check_tensors()) << "random blocks with NaN or Inf scales";
  return out;
}

TEST_F(KQuantModel, ConvertWritesTheQ4_K_MMix) {
  const fs::path out = expect_convert_writes<TinyKMix>("gemma3-tiny-k", "Q4_K_M", 15);
  Engine<TinyK<Format::Q4_K>> plain(context(), tools::engine_options_from_env());
  try {
    plain.load(out);
    ADD_FAILURE() << "a Q4_K_M file loaded into an all-Q4_K engine";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Q6_K"), std::string::npos) << e.what();
  }
}

// The mixes over rows that are not whole superblocks write llama-quantize's
// fallbacks (the 1B's and 270M's files); --type Q5_0 writes every matrix in
// Q5_0 (ggml's reference quantizer) and the embedding in Q6_K, as
// llama-quantize does, under its own ftype (LLAMA_FTYPE_MOSTLY_Q5_0 = 8), and
// --type Q5_0 --pure the embedding in Q5_0 too; Q4_K_S its own rule (Q5_K for
// attn_v in the first 4 layers, ffn_down in the first eighth).
inline constexpr Scheme kLlamaQ5_0 = schemes::kQ5_0.with_embedding(Format::Q6_K);
TEST_F(KQuantModel, ConvertWritesTheFallbacks) {
  expect_convert_writes<TinyFallbackQ4_K_M>("gemma3-tiny-k-fallback", "Q4_K_M", 15);
  expect_convert_writes<TinyFallbackQ5_K_M>("gemma3-tiny-k-fallback", "Q5_K_M", 17);
  expect_convert_writes<TinyKMixOf<kLlamaQ5_0>>("gemma3-tiny-k", "Q5_0", 8);
  expect_convert_writes<TinyK<Format::Q5_0>>("gemma3-tiny-k", "Q5_0 --pure", 8);
  expect_convert_writes<TinyKMixOf<schemes::kQ4_K_S>>("gemma3-tiny-k", "Q4_K_S", 14);
}

// Safetensors quantized to Q5_0 / Q5_1 on the GPU at load (convert.comp) are
// the blocks ggml's reference quantizer makes on the CPU (unicorn-convert --hf,
// tools/ggml_quantize.hpp): the two engines' logits are equal bit for bit. On
// the transformers fixture's tiny model (tests/model/fixtures/tiny).
template <Format F>
struct TinyHf {
  static constexpr DeploymentConfig kConfig = make_deployment(kGemma3Tiny, schemes::all(F, Format::F32), 256, 32);
};
template <Format F>
void expect_load_quantization_matches_the_file() {
  const char* fixtures = std::getenv("UNICORN_FIXTURES");
  ASSERT_TRUE(fixtures) << "UNICORN_FIXTURES is not set (run through ctest)";
  const std::string type(format_name(F));
  const fs::path hf = fs::path(fixtures) / "tiny", gguf = temp_dir() / ("tiny-hf-" + type + ".gguf");
  const std::string cmd = std::string(std::getenv("UNICORN_CONVERT")) + " --hf " + hf.string() + " --type " + type +
                          " --pure --out " + gguf.string() + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<int32_t> prompt(20);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % kGemma3Tiny.vocab);
  Engine<TinyHf<F>> from_hf(context(), tools::engine_options_from_env());
  Engine<TinyHf<F>> from_gguf(context(), tools::engine_options_from_env());
  from_hf.load(hf);
  from_gguf.load(gguf);
  const auto a = from_hf.forward_logits(prompt), b = from_gguf.forward_logits(prompt);
  ASSERT_EQ(a.size(), b.size());
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]);
  EXPECT_EQ(differ, 0u) << format_name(F) << ": " << differ << " of " << a.size() << " logits differ";
}
TEST_F(KQuantModel, Q5_0AndQ5_1QuantizedAtLoadEqualTheFile) {
  expect_load_quantization_matches_the_file<Format::Q5_0>();
  expect_load_quantization_matches_the_file<Format::Q5_1>();
}

// A file whose matrices are not the engine's K-quant is refused, naming the
// format (a float source is never quantized to a K-quant at load: upload.hpp
// refuses that too, for safetensors).
TEST_F(KQuantModel, FloatFileRefused) {
  Engine<TinyK<Format::Q4_K>> engine(context(), tools::engine_options_from_env());
  try {
    engine.load(base_model());  // every matrix F32: the scheme says Q4_K
    ADD_FAILURE() << "an F32 file loaded into a Q4_K engine";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Q4_K"), std::string::npos) << e.what();
  }
}

// --check-tensors on K-quant and Q4_1 / Q5_0 / Q5_1 parts: their f16 values
// (d; Q4_K's and Q5_K's d and dmin; Q4_1's and Q5_1's d and m) are the last
// bytes of each part on the device. Clean files pass
// (run<>, above); a NaN or Inf planted in one superblock's d or dmin is found
// and named with the element where that superblock starts.
template <Format F>
void expect_check_tensors_finds(size_t offset_in_block, uint16_t bits, const std::string& what) {
  const std::string tensor = "blk.1.ffn_down.weight";  // [256 rows, 512 columns]
  const size_t superblock = 1280 / format_info(F).block_elems;  // the block at row 2, column 256
  const size_t block_bytes = format_info(F).block_bytes;
  const auto [bad, unused] = model_pair(
      F,
      [&](const std::string& name, std::vector<std::byte>& blocks) {
        if (name != tensor) return;
        blocks[superblock * block_bytes + offset_in_block] = std::byte(bits & 0xff);
        blocks[superblock * block_bytes + offset_in_block + 1] = std::byte(bits >> 8);
      },
      "-bad");
  Engine<TinyK<F>> engine(context(), tools::engine_options_from_env());
  engine.load(bad);
  try {
    engine.check_tensors();
    ADD_FAILURE() << format_name(F) << ": the planted " << what << " was not found";
  } catch (const Error& e) {
    const std::string want = "tensor '" + tensor + "' (" + std::string(format_name(F)) + ") holds " + what +
                             " at element 1280 (row 2, column 256)";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what() << "\nwant: " << want;
  }
}
TEST_F(KQuantModel, CheckTensorsFindsABadScale) {
  expect_check_tensors_finds<Format::Q4_K>(2, 0x7e01, "NaN");  // dmin
  expect_check_tensors_finds<Format::Q5_K>(0, 0xfc00, "Inf");  // d
  expect_check_tensors_finds<Format::Q6_K>(208, 0x7c00, "Inf");  // d
  expect_check_tensors_finds<Format::Q4_1>(2, 0x7e01, "NaN");  // m
  expect_check_tensors_finds<Format::Q5_0>(0, 0xfc00, "Inf");  // d
  expect_check_tensors_finds<Format::Q5_1>(2, 0x7c00, "Inf");  // m
}
