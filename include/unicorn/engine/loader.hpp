// unicorn/engine/loader.hpp — fill an engine's weights from a GGUF file or a
// Hugging Face directory, after checking the file against the compiled layout.
//
// Decision 2 of DESIGN.md: every hyperparameter, and every tensor's name, shape
// and type, must match the engine; the first mismatch is an error that names
// the key or tensor, both values, and — when the file is another official
// Gemma 3 size — the binary to use instead. Nothing is uploaded before the
// whole file has been checked.
//
// Both kinds of file are a WeightFile that yields each tensor's (name, type,
// shape, bytes) to one loop, load_weights(). GGUF tensors are already in the
// device format and are copied as they are. Safetensors (BF16/F16/F32) are
// converted on the GPU to the scheme's format; their norm weights become
// 1 + w, the GGUF convention the shaders read.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "unicorn/engine/core.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/hf_config.hpp"
#include "unicorn/model/from_hf.hpp"
#include "unicorn/model/hparams.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/io/tensor_names.hpp"

namespace unicorn {

struct LoadReport {
  std::string format;   // "GGUF" or "safetensors"
  uint64_t bytes = 0;   // weight bytes placed on the device
  size_t tensors = 0;   // tensors read from the file
  size_t skipped = 0;   // vision-tower / projector tensors not loaded
  double seconds = 0;
};

// Called as loading proceeds with (bytes done, bytes total).
using LoadProgress = std::function<void(uint64_t, uint64_t)>;

namespace detail {

// Where a ModelDims field comes from in a file, for messages: its key in the
// table of model/hparams.hpp.
inline std::string_view dims_key(std::string_view field, bool gguf) {
  const Hparam* h = find_hparam(field);
  if (h == nullptr) return field;
  if (!gguf) return h->hf;
  return field == "vocab" ? kGgufVocabSource : h->gguf;
}

// The official size a file's dimensions belong to, for "use this binary" hints.
inline std::string official_size_hint(const ModelDims& file) {
  for (const ModelDims* m : {&kGemma3_270M, &kGemma3_1B, &kGemma3_4B, &kGemma3_12B, &kGemma3_27B})
    if (m->hidden == file.hidden && m->layers == file.layers)
      return std::string("; the file is ") + std::string(m->name) + ": use unicorn-" +
             std::string(m->name);
  return "";
}

template <class T>
std::string show(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Compares every ModelDims field (Hana's list of fields) and names the first
// that differs, with the key it comes from in the file.
inline void check_dims(const ModelDims& file, const ModelDims& engine, const std::string& source,
                       bool gguf) {
  namespace hana = boost::hana;
  hana::for_each(hana::accessors<ModelDims>(), [&](auto pair) {
    const std::string_view field = hana::to<char const*>(hana::first(pair));
    if (field == "name") return;
    const auto a = hana::second(pair)(file);
    const auto b = hana::second(pair)(engine);
    bool same;
    if constexpr (std::is_floating_point_v<decltype(a)>)
      same = std::fabs(a - b) <= 1e-5f * std::max(std::fabs(a), std::fabs(b));
    else
      same = a == b;
    if (!same)
      throw Error(source + ": " + std::string(dims_key(field, gguf)) + " is " + show(a) +
                  " but this engine (" + std::string(engine.name) + ") is compiled for " +
                  show(b) + official_size_hint(file));
  });
}

inline ModelDims dims_from_gguf(const io::GgufFile& g, const ModelDims& engine) {
  const std::string arch = g.try_string(kGgufArchitectureKey).value_or("(none)");
  if (arch != kGgufArchitecture)
    throw Error(g.name() + ": " + std::string(kGgufArchitectureKey) + " is '" + arch +
                "'; this engine runs Gemma 3 ('" + std::string(kGgufArchitecture) + "') files");
  // The local RoPE base, the layer pattern and the query scale are taken from
  // the engine: llama.cpp fixes them for gemma3 (10000, every 6th layer, and
  // hidden/heads for 27B else head_dim), model/hparams.hpp says more.
  ModelDims d = engine;
  d.hidden = g.get_u32(gguf_key("hidden"));
  d.layers = g.get_u32(gguf_key("layers"));
  d.heads = g.get_u32(gguf_key("heads"));
  d.kv_heads = g.get_u32(gguf_key("kv_heads"));
  d.head_dim = g.try_u32(gguf_key("head_dim")).value_or(d.heads ? d.hidden / d.heads : 0);
  d.ffn = g.get_u32(gguf_key("ffn"));
  d.sliding_window = g.get_u32(gguf_key("sliding_window"));
  d.rope_theta_global = g.try_f32(gguf_key("rope_theta_global")).value_or(1e6f);
  d.rope_scale_global = g.try_f32(gguf_key("rope_scale_global")).value_or(1.0f);
  d.rms_eps = g.get_f32(gguf_key("rms_eps"));
  d.max_context = g.get_u32(gguf_key("max_context"));
  const io::GgufTensor* embd = g.find_tensor("token_embd.weight");
  if (!embd || embd->dims.size() != 2)
    throw Error(g.name() + ": tensor 'token_embd.weight' is missing or not 2-D");
  d.vocab = uint32_t(embd->dims[1]);
  // A vocabulary in the file must have a row of the embedding per token, as
  // llama.cpp requires: ids past the rows would read beyond the table.
  if (const io::GgufValue* tokens = g.find("tokenizer.ggml.tokens"); tokens && tokens->array())
    if (tokens->array()->size() != embd->dims[1])
      throw Error(g.name() + ": tokenizer.ggml.tokens lists " + std::to_string(tokens->array()->size()) +
                  " tokens but token_embd.weight has " + std::to_string(embd->dims[1]) +
                  " rows: the vocabulary and the embedding disagree");
  return d;
}

// How convert() reads a tensor stored in a float format.
inline SourceType source_type_of(Format f) {
  switch (f) {
    case Format::F32: return SourceType::F32;
    case Format::F16: return SourceType::F16;
    case Format::BF16: return SourceType::BF16;
    default: throw Error("internal: " + std::string(format_name(f)) + " is not a float format");
  }
}

inline std::string shape_text(std::span<const uint64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// One tensor as a model file holds it.
struct FileTensor {
  std::string name;              // the file's own name for it
  std::optional<Format> format;  // nullopt: a type this engine does not read
  std::string type_name;         // as the file says it: "Q8_0", "BF16", "ggml type 12"
  std::vector<uint64_t> shape;   // in the file's order (WeightFile::innermost_first)
  std::span<const std::byte> data;
};

// A model file as load_weights() reads it: a GGUF file (GgufWeights) or a
// Hugging Face directory's safetensors (HfWeights). Opening one checks its
// hyperparameters against the engine.
class WeightFile {
 public:
  virtual ~WeightFile() = default;
  virtual const char* format() const = 0;      // LoadReport::format
  virtual const std::string& label() const = 0;  // names the file in messages
  // GGUF: tensors are in the device format and copied as they are.
  // Safetensors: float tensors are converted on the GPU to the scheme's
  // format, norm weights as 1 + w (the file holds w).
  virtual bool converted() const = 0;
  // Shapes innermost first (GGUF's dims: [cols, rows]), or outermost first.
  virtual bool innermost_first() const = 0;
  // The tensor of the slot whose GGUF name is given, or nullopt; and the name
  // a missing one goes by in this file.
  virtual std::optional<FileTensor> find(const std::string& gguf_name) const = 0;
  virtual std::string missing_name(const std::string& gguf_name) const = 0;
  // Throws on a tensor outside `used` that a text model cannot skip; returns
  // how many were skipped (vision tower, projector, a tied lm_head).
  virtual size_t check_unused(const std::set<std::string>& used) const = 0;
  // The file's pages of `data` can go: it is on the device.
  virtual void release(std::span<const std::byte> data) const = 0;
};

class GgufWeights final : public WeightFile {
 public:
  GgufWeights(const std::filesystem::path& path, const ModelDims& engine)
      : g_(io::GgufFile::open(path)), label_(path.filename().string()) {
    check_dims(dims_from_gguf(g_, engine), engine, label_, true);
  }
  const char* format() const override { return "GGUF"; }
  const std::string& label() const override { return label_; }
  bool converted() const override { return false; }
  bool innermost_first() const override { return true; }
  std::optional<FileTensor> find(const std::string& gguf_name) const override {
    const io::GgufTensor* f = g_.find_tensor(gguf_name);
    if (!f) return std::nullopt;
    const FormatInfo* ff = find_format(f->ggml_type);
    return FileTensor{f->name, ff ? std::optional(ff->format) : std::nullopt,
                      ff ? std::string(ff->name) : "ggml type " + std::to_string(f->ggml_type), f->dims,
                      f->data};
  }
  std::string missing_name(const std::string& gguf_name) const override { return gguf_name; }
  size_t check_unused(const std::set<std::string>& used) const override {
    for (const auto& f : g_.tensors())
      if (!used.count(f.name))
        throw Error(label_ + ": unexpected tensor '" + f.name + "' (not part of a Gemma 3 text model)");
    return 0;
  }
  void release(std::span<const std::byte> data) const override { g_.release(data); }

 private:
  io::GgufFile g_;
  std::string label_;
};

class HfWeights final : public WeightFile {
 public:
  HfWeights(const std::filesystem::path& dir, const ModelDims& engine) : label_(dir.filename().string()) {
    const auto config_path = dir / "config.json";
    if (!std::filesystem::exists(config_path))
      throw Error(dir.string() + ": no config.json (a Hugging Face model directory has one)");
    const io::HfTextConfig hf = io::parse_hf_config(config_path);
    io::check_gemma3_supported(hf, config_path.string());
    const std::string src = label_ + "/config.json";
    check_dims(dims_from_hf(hf, engine, src), engine, src, false);
    tied_ = hf.tie_word_embeddings;
    st_ = io::SafetensorsModel::open(dir);
  }
  const char* format() const override { return "safetensors"; }
  const std::string& label() const override { return label_; }
  bool converted() const override { return true; }
  bool innermost_first() const override { return false; }
  std::optional<FileTensor> find(const std::string& gguf_name) const override {
    const io::SafeTensor* f = nullptr;
    for (auto layout : {io::HfLayout::CausalLM, io::HfLayout::Multimodal, io::HfLayout::MultimodalLegacy})
      if (!f) f = st_->find(io::gguf_to_hf_name(gguf_name, layout));
    if (!f) return std::nullopt;
    std::optional<Format> format;
    if (f->dtype == "F32") format = Format::F32;
    else if (f->dtype == "BF16") format = Format::BF16;
    else if (f->dtype == "F16") format = Format::F16;
    return FileTensor{f->name, format, f->dtype, f->shape, f->data};
  }
  std::string missing_name(const std::string& gguf_name) const override { return io::gguf_to_hf_name(gguf_name); }
  size_t check_unused(const std::set<std::string>& used) const override {
    size_t skipped = 0;
    for (const auto& f : st_->tensors()) {
      if (used.count(f.name)) continue;
      switch (io::classify_hf_tensor(f.name)) {
        case io::HfTensorKind::Vision: ++skipped; break;
        case io::HfTensorKind::Text:
          // A tied checkpoint may still store lm_head.weight (a copy of the embedding).
          if (f.name.ends_with("lm_head.weight") && tied_) {
            ++skipped;
            break;
          }
          throw Error(label_ + ": tensor '" + f.name + "' is not used by a tied-embedding Gemma 3 "
                      "text model");
        case io::HfTensorKind::Unknown:
          throw Error(label_ + ": unexpected tensor '" + f.name + "' (not part of Gemma 3)");
      }
    }
    return skipped;
  }
  void release(std::span<const std::byte>) const override {}  // the mapping goes with the file

 private:
  std::string label_;
  bool tied_ = true;
  std::optional<io::SafetensorsModel> st_;
};

// The one loader loop, for either kind of file. Every weight tensor is found
// and checked (type, shape) before any is uploaded; then each goes to the
// device part by part, copied as it is or converted on the GPU. The LM head a
// scheme keeps as its own copy is not in the file: it is the embedding's
// tensor, converted to the LM head's format.
inline LoadReport load_weights(EngineCore& core, const WeightFile& file, const LoadProgress& progress) {
  const auto& L = core.layout();
  const std::string& src = file.label();
  struct Planned {
    const TensorSlot* slot;
    FileTensor tensor;
    bool convert;
  };
  std::vector<Planned> plan;
  std::set<std::string> used;
  uint64_t total = 0;
  for (const TensorSlot& t : L.tensors) {
    if (t.arena != Arena::Weights) continue;
    const std::string gguf = (t.role == Role::LmHead ? L.weight(Role::Embedding) : t).gguf_name();
    std::optional<FileTensor> f = file.find(gguf);
    if (!f) throw Error(src + ": tensor '" + file.missing_name(gguf) + "' is missing");
    const bool convert = file.converted() || t.role == Role::LmHead;
    const bool is_float = f->format == Format::F32 || f->format == Format::F16 || f->format == Format::BF16;
    if (convert && !is_float)
      throw Error(src + ": tensor '" + f->name + "' has dtype " + f->type_name + "; expected BF16, F16 or F32");
    if (!convert && f->format != t.format)
      throw Error(src + ": tensor '" + f->name + "' is " + f->type_name +
                  " but this engine's scheme stores it as " + std::string(format_name(t.format)));
    const std::vector<uint64_t> want = t.rows == 1                ? std::vector<uint64_t>{t.cols}
                                       : file.innermost_first() ? std::vector<uint64_t>{t.cols, t.rows}
                                                                : std::vector<uint64_t>{t.rows, t.cols};
    // Embedding rows past the text vocabulary (image soft tokens) are not
    // loaded. (A GGUF file's rows are its vocabulary, which check_dims has
    // already compared with the engine's.)
    const bool embedding = t.role == Role::Embedding || t.role == Role::LmHead;
    const size_t rows_at = file.innermost_first() ? 1 : 0;
    const bool extra_rows = embedding && f->shape.size() == 2 && f->shape[rows_at] >= t.rows &&
                            f->shape[1 - rows_at] == t.cols;
    if (f->shape != want && !extra_rows)
      throw Error(src + ": tensor '" + f->name + "' has shape " + shape_text(f->shape) +
                  ", this engine expects " + shape_text(want));
    used.insert(f->name);
    plan.push_back({&t, std::move(*f), convert});
    total += t.bytes;
  }
  const size_t skipped = file.check_unused(used);

  uint64_t done = 0;
  for (const Planned& p : plan) {
    const TensorSlot& t = *p.slot;
    const auto parts = L.parts_of(t);
    // Device format: bytes per row of the slot; float source: of the file's.
    const uint64_t row = row_bytes(p.convert ? *p.tensor.format : t.format, t.cols);
    // A file of w, where the engine stores 1 + w.
    const float add = file.converted() && is_norm(t.role) ? 1.0f : 0.0f;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (p.convert)
        core.convert(t, i, p.tensor.data.subspan(parts[i].row_begin * row, parts[i].rows * row),
                     source_type_of(*p.tensor.format), add);
      else
        core.upload(t, i, p.tensor.data.subspan(parts[i].row_begin * row, parts[i].bytes));
      done += parts[i].bytes;
      if (progress) progress(done, total);
    }
    // upload() and convert() have copied the bytes (into staging, or into
    // mapped Gtt memory): the file's pages of this tensor can go (peak RSS:
    // a tensor, not the file).
    file.release(p.tensor.data);
  }
  return {file.format(), total, used.size(), skipped, 0};
}

}  // namespace detail

// Loads a GGUF file, or a Hugging Face directory (config.json + safetensors).
inline LoadReport load_model(detail::EngineCore& core, const std::filesystem::path& path,
                             const LoadProgress& progress = {}) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw Error(path.string() + ": no such file or directory");
  LoadReport r;
  // Uploads run asynchronously (gpu/staging.hpp): done, and their staging
  // buffers freed, before this returns or throws.
  struct FinishUploads {
    detail::EngineCore& core;
    ~FinishUploads() {
      try {
        core.finish_uploads();
      } catch (...) {  // already unwinding from the load's own error, or the device is lost
      }
    }
  } finish{core};
  const ModelDims& engine = core.config().model;
  if (std::filesystem::is_directory(path, ec)) {
    r = detail::load_weights(core, detail::HfWeights(path, engine), progress);
  } else if (path.filename() == "config.json") {
    r = detail::load_weights(core, detail::HfWeights(path.parent_path(), engine), progress);
  } else {
    char magic[4] = {};
    std::ifstream(path, std::ios::binary).read(magic, 4);
    if (std::string_view(magic, 4) != "GGUF")
      throw Error(path.string() + ": not a GGUF file (and not a Hugging Face directory with "
                  "config.json)");
    r = detail::load_weights(core, detail::GgufWeights(path, engine), progress);
  }
  core.finish_uploads();  // here, not in the guard, so that a device error is reported
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace unicorn
