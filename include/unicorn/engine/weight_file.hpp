// unicorn/engine/weight_file.hpp — a model file as the loader reads it, and
// every way it differs from a compiled engine.
//
// Every hyperparameter, and every tensor's name, shape and type, must match
// the engine. check_file() lists each difference in words (the key or tensor,
// both values); the loader refuses a file with any
// (the first is its error), and a binary holding several engines runs a file
// in the one with none (engine/pick.hpp). Both kinds of file are a WeightFile
// that yields each tensor's (name, type, shape, bytes): a GGUF file, whose
// tensors are in the device format, or a Hugging Face directory, whose
// BF16/F16/F32 safetensors are converted on the GPU. Nothing here touches the
// device.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/hf_config.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/io/tensor_names.hpp"
#include "unicorn/layout/layout.hpp"
#include "unicorn/model/from_gguf.hpp"
#include "unicorn/model/from_hf.hpp"
#include "unicorn/text/load_tokenizer.hpp"

namespace unicorn::detail {

// Where a ModelDims field comes from in a file, for messages: its key in the
// table of config/hparams.hpp.
std::string_view dims_key(std::string_view field, bool gguf);

// The official size a file's dimensions belong to, for "use this binary" hints.
std::string official_size_hint(const ModelDims& file);

template <class T>
std::string show(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Every ModelDims field (Hana's list of fields) that differs, each named with
// the key it comes from in the file.
std::vector<std::string> dims_differences(const ModelDims& file, const ModelDims& engine,
                                          const std::string& source, bool gguf);

std::string shape_text(std::span<const uint64_t> dims);

// One tensor as a model file holds it.
struct FileTensor {
  std::string name;              // the file's own name for it
  std::optional<Format> format;  // nullopt: a type this engine does not read
  std::string type_name;         // as the file says it: "Q8_0", "BF16", "ggml type 12"
  std::vector<uint64_t> shape;   // in the file's order (WeightFile::innermost_first)
  std::span<const std::byte> data;
};

// A model file as the loader reads it: a GGUF file (GgufWeights) or a Hugging
// Face directory's safetensors (HfWeights).
class WeightFile {
 public:
  virtual ~WeightFile() = default;
  virtual const char* format() const = 0;      // LoadReport::format
  virtual const std::string& label() const = 0;  // names the file in messages
  // The file's dimensions, with what it does not carry taken from `engine`;
  // and where they come from, for messages.
  virtual ModelDims dims(const ModelDims& engine) const = 0;
  virtual std::string dims_source() const = 0;
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
  // Where the model's own tokenizer is, for text::model_tokenizer: this GGUF
  // file when it has the tokenizer.ggml.* keys, the directory when it holds
  // tokenizer.json; empty when it carries none.
  virtual std::filesystem::path vocabulary() const = 0;
};

class GgufWeights final : public WeightFile {
 public:
  // The file's metadata that no engine compares (its vocabulary's) is checked
  // here, once: a file that fails is refused whichever engine is asked.
  explicit GgufWeights(const std::filesystem::path& path)
      : g_(io::GgufFile::open(path)), path_(path), label_(path.filename().string()) {
    const io::GgufTensor* embd = g_.find_tensor("token_embd.weight");
    text::check_gguf_vocabulary(g_, embd && embd->dims.size() == 2 ? embd->dims[1] : 0);
  }
  const char* format() const override { return "GGUF"; }
  const std::string& label() const override { return label_; }
  ModelDims dims(const ModelDims& engine) const override { return dims_from_gguf(g_, engine); }
  std::string dims_source() const override { return label_; }
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
  std::filesystem::path vocabulary() const override {
    return g_.try_string("tokenizer.ggml.model") ? path_ : std::filesystem::path();
  }
  const io::GgufFile& gguf() const { return g_; }

 private:
  io::GgufFile g_;
  std::filesystem::path path_;
  std::string label_;
};

class HfWeights final : public WeightFile {
 public:
  explicit HfWeights(const std::filesystem::path& dir) : dir_(dir), label_(dir.filename().string()) {
    const auto config_path = dir / "config.json";
    if (!std::filesystem::exists(config_path))
      throw Error(dir.string() + ": no config.json (a Hugging Face model directory has one)");
    hf_ = io::parse_hf_config(config_path);
    io::check_gemma3_supported(hf_, config_path.string());
  }
  const char* format() const override { return "safetensors"; }
  const std::string& label() const override { return label_; }
  ModelDims dims(const ModelDims& engine) const override { return dims_from_hf(hf_, engine, dims_source()); }
  std::string dims_source() const override { return label_ + "/config.json"; }
  bool converted() const override { return true; }
  bool innermost_first() const override { return false; }
  std::optional<FileTensor> find(const std::string& gguf_name) const override {
    const io::SafeTensor* f = nullptr;
    for (auto layout : {io::HfLayout::CausalLM, io::HfLayout::Multimodal, io::HfLayout::MultimodalLegacy})
      if (!f) f = safetensors().find(io::gguf_to_hf_name(gguf_name, layout));
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
    for (const auto& f : safetensors().tensors()) {
      if (used.count(f.name)) continue;
      switch (io::classify_hf_tensor(f.name)) {
        case io::HfTensorKind::Vision: ++skipped; break;
        case io::HfTensorKind::Text:
          // A tied checkpoint may still store lm_head.weight (a copy of the embedding).
          if (f.name.ends_with("lm_head.weight") && hf_.tie_word_embeddings) {
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
  std::filesystem::path vocabulary() const override {
    std::error_code ec;
    return std::filesystem::exists(dir_ / "tokenizer.json", ec) ? dir_ : std::filesystem::path();
  }

 private:
  // Opened when a tensor is first asked for: a config that does not fit the
  // engine is named before a missing or bad weights file.
  const io::SafetensorsModel& safetensors() const {
    if (!st_) st_ = io::SafetensorsModel::open(dir_);
    return *st_;
  }

  std::filesystem::path dir_;
  std::string label_;
  io::HfTextConfig hf_;
  mutable std::optional<io::SafetensorsModel> st_;
};

// A GGUF file or a Hugging Face directory (or its config.json), opened.
std::unique_ptr<WeightFile> open_weight_file(const std::filesystem::path& path);

// A weight tensor of the layout, found in the file and checked.
struct PlannedTensor {
  const TensorSlot* slot;
  FileTensor tensor;
  bool convert;  // converted on the GPU (float source), else copied as it is
};

// How a file fits an engine: every differing hyperparameter, or else every
// differing tensor (in layout order), the tensors to load when there is none, and how many weight
// matrices a converted file holds in another format than the engine stores
// (0 for a GGUF file that fits: its tensors are copied as they are).
struct FileCheck {
  std::vector<std::string> dims_differences;
  std::vector<std::string> tensor_differences;
  std::vector<PlannedTensor> plan;
  std::set<std::string> used;
  uint64_t bytes = 0;
  size_t conversions = 0;
  // The file's embedding format where it is not the engine's and the engine
  // takes it (Scheme::takes_embedding): the engine is laid out again for it
  // (EngineCore::hold_embedding_as) and the file checked once more, since
  // `plan` points into the layout checked here.
  std::optional<Format> embedding;

  bool fits() const { return dims_differences.empty() && tensor_differences.empty(); }
  const std::string& first() const {
    return dims_differences.empty() ? tensor_differences.front() : dims_differences.front();
  }
  size_t differences() const { return dims_differences.size() + tensor_differences.size(); }
};

// Checks `file` against an engine of `model` dims and layout `L`: every
// hyperparameter, and every weight tensor's presence, type and shape. The LM
// head a scheme keeps as its own copy is not in the file: it is the
// embedding's tensor, converted to the LM head's format. A tied embedding
// may come in any format (FileCheck::embedding).
FileCheck check_file(const WeightFile& file, const ModelDims& model, const LayoutView& L);

}  // namespace unicorn::detail

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::detail {

UNICORN_DECL std::string_view dims_key(std::string_view field, bool gguf) {
  const Hparam* h = find_hparam(field);
  if (h == nullptr) return field;
  if (!gguf) return h->hf;
  return field == "vocab" ? kGgufVocabSource : h->gguf;
}

UNICORN_DECL std::string official_size_hint(const ModelDims& file) {
  for (const ModelDims* m : {&kGemma3_270M, &kGemma3_1B, &kGemma3_4B, &kGemma3_12B, &kGemma3_27B})
    if (m->hidden == file.hidden && m->layers == file.layers)
      return std::string("; the file is ") + std::string(m->name) + ": use unicorn-" +
             std::string(m->name);
  return "";
}

UNICORN_DECL std::vector<std::string> dims_differences(const ModelDims& file, const ModelDims& engine,
                                                       const std::string& source, bool gguf) {
  namespace hana = boost::hana;
  std::vector<std::string> out;
  hana::for_each(hana::accessors<ModelDims>(), [&](auto pair) {
    const std::string_view field = hana::to<char const*>(hana::first(pair));
    if (field == "name") return;
    const auto a = hana::second(pair)(file);
    const auto b = hana::second(pair)(engine);
    bool same;
    if constexpr (std::is_floating_point_v<decltype(a)>)
      same = std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= 1e-5f * std::max(std::fabs(a), std::fabs(b));
    else
      same = a == b;
    if (!same)
      out.push_back(source + ": " + std::string(dims_key(field, gguf)) + " is " + show(a) + " but this engine (" +
                    std::string(engine.name) + ") is compiled for " + show(b));
  });
  return out;
}

UNICORN_DECL std::string shape_text(std::span<const uint64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

UNICORN_DECL std::unique_ptr<WeightFile> open_weight_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(path.string() + ": no such file or directory");
  if (std::filesystem::is_directory(path, ec)) return std::make_unique<HfWeights>(path);
  if (path.filename() == "config.json") return std::make_unique<HfWeights>(path.parent_path());
  char magic[4] = {};
  std::ifstream(path, std::ios::binary).read(magic, 4);
  if (std::string_view(magic, 4) != "GGUF")
    throw Error(path.string() + ": not a GGUF file (and not a Hugging Face directory with config.json)");
  return std::make_unique<GgufWeights>(path);
}

UNICORN_DECL FileCheck check_file(const WeightFile& file, const ModelDims& model, const LayoutView& L) {
  FileCheck r;
  r.dims_differences = dims_differences(file.dims(model), model, file.dims_source(), !file.converted());
  if (!r.dims_differences.empty()) return r;  // the tensors' shapes would all differ too
  const std::string& src = file.label();
  const bool tied = &L.weight(Role::LmHead) == &L.weight(Role::Embedding);  // the LM head reads the embedding
  for (const TensorSlot& t : L.tensors) {
    if (t.arena != Arena::Weights) continue;
    const std::string gguf = (t.role == Role::LmHead ? L.weight(Role::Embedding) : t).gguf_name();
    std::optional<FileTensor> f = file.find(gguf);
    if (!f) {
      r.tensor_differences.push_back(src + ": tensor '" + file.missing_name(gguf) + "' is missing");
      continue;
    }
    const bool convert = file.converted() || t.role == Role::LmHead;
    const bool is_float = f->format == Format::F32 || f->format == Format::F16 || f->format == Format::BF16;
    if (convert && !is_float)
      r.tensor_differences.push_back(src + ": tensor '" + f->name + "' has dtype " + f->type_name +
                                     "; expected BF16, F16 or F32");
    else if (convert && is_block_quantized(t.format) && !quantized_on_device(t.format))
      r.tensor_differences.push_back(src + ": tensor '" + f->name + "' is " + f->type_name + " and this engine stores it as " +
                                     std::string(format_name(t.format)) +
                                     ", a format the loader does not quantize to (llama-quantize writes such files)");
    else if (!convert && f->format != t.format && t.role == Role::Embedding && tied && f->format)
      r.embedding = *f->format;  // held as it is: the engine is laid out for it
    else if (!convert && f->format != t.format)
      r.tensor_differences.push_back(src + ": tensor '" + f->name + "' is " + f->type_name +
                                     " but this engine's scheme stores it as " + std::string(format_name(t.format)));
    const std::vector<uint64_t> want = t.rows == 1                ? std::vector<uint64_t>{t.cols}
                                       : file.innermost_first() ? std::vector<uint64_t>{t.cols, t.rows}
                                                                : std::vector<uint64_t>{t.rows, t.cols};
    // Embedding rows past the text vocabulary (image soft tokens) are not
    // loaded. (A GGUF file's rows are its vocabulary, which the dims compare.)
    const bool embedding = t.role == Role::Embedding || t.role == Role::LmHead;
    const size_t rows_at = file.innermost_first() ? 1 : 0;
    const bool extra_rows = embedding && f->shape.size() == 2 && f->shape[rows_at] >= t.rows &&
                            f->shape[1 - rows_at] == t.cols;
    if (f->shape != want && !extra_rows)
      r.tensor_differences.push_back(src + ": tensor '" + f->name + "' has shape " + shape_text(f->shape) +
                                     ", this engine expects " + shape_text(want));
    if (file.converted() && t.rows > 1 && t.role != Role::LmHead && f->format != t.format) ++r.conversions;
    r.used.insert(f->name);
    r.bytes += t.role == Role::Embedding && r.embedding ? t.rows * row_bytes(*r.embedding, t.cols) : t.bytes;
    r.plan.push_back({&t, std::move(*f), convert});
  }
  if (!r.fits()) r.plan.clear();
  return r;
}

}  // namespace unicorn::detail

#endif  // UNICORN_DEFINE_HERE
