// unicorn/engine/loader.hpp — fill an engine's weights from a GGUF file or a
// Hugging Face directory, after checking the file against the compiled layout.
//
// Decision 2 of DESIGN.md: every hyperparameter, and every tensor's name, shape
// and type, must match the engine; the first mismatch is an error that names
// the key or tensor, both values, and — when the file is another official
// Gemma 3 size — the binary to use instead. Nothing is uploaded before the
// whole file has been checked.
//
// GGUF tensors are already in the device format and are copied as they are.
// Safetensors (BF16/F16/F32) are converted on the GPU to the scheme's format;
// their norm weights become 1 + w, the GGUF convention the shaders read.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

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
  size_t tensors = 0;
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

inline LoadReport load_gguf(EngineCore& core, const std::filesystem::path& path,
                            const LoadProgress& progress) {
  const auto g = io::GgufFile::open(path);
  const std::string src = path.filename().string();
  const auto& L = core.layout();
  check_dims(dims_from_gguf(g, core.config().model), core.config().model, src, true);

  // Check every tensor before uploading any.
  std::set<std::string> expected;
  uint64_t total = 0;
  for (const TensorSlot& t : L.tensors) {
    if (t.arena != Arena::Weights) continue;
    if (t.role == Role::LmHead) {  // not in the file: made from the embedding below
      total += t.bytes;
      continue;
    }
    const std::string name = t.gguf_name();
    expected.insert(name);
    const io::GgufTensor* f = g.find_tensor(name);
    if (!f) throw Error(src + ": tensor '" + name + "' is missing");
    if (f->ggml_type != uint32_t(t.format)) {
      const auto* ff = find_format(f->ggml_type);
      throw Error(src + ": tensor '" + name + "' is " +
                  (ff ? std::string(ff->name) : "ggml type " + std::to_string(f->ggml_type)) +
                  " but this engine's scheme stores it as " + std::string(format_name(t.format)));
    }
    // GGUF dims are innermost first: [cols, rows], or [cols] for a vector.
    const std::vector<uint64_t> want = t.rows == 1 ? std::vector<uint64_t>{t.cols}
                                                   : std::vector<uint64_t>{t.cols, t.rows};
    if (f->dims != want)
      throw Error(src + ": tensor '" + name + "' has shape " + shape_text(f->dims) +
                  ", this engine expects " + shape_text(want));
    total += t.bytes;
  }
  for (const auto& f : g.tensors())
    if (!expected.count(f.name))
      throw Error(src + ": unexpected tensor '" + f.name + "' (not part of a Gemma 3 text model)");

  uint64_t done = 0;
  for (const TensorSlot& t : L.tensors) {
    if (t.arena != Arena::Weights) continue;
    const auto parts = L.parts_of(t);
    if (t.role == Role::LmHead) {  // the scheme's own LM head: the embedding, converted
      const TensorSlot& e = L.weight(Role::Embedding);
      const auto data = g.find_tensor(e.gguf_name())->data;
      const uint64_t row = row_bytes(e.format, e.cols);
      for (size_t i = 0; i < parts.size(); ++i) {
        core.convert(t, i, data.subspan(parts[i].row_begin * row, parts[i].rows * row),
                     source_type_of(e.format), 0.0f);
        done += parts[i].bytes;
        if (progress) progress(done, total);
      }
      g.release(data);
      continue;
    }
    const auto data = g.find_tensor(t.gguf_name())->data;
    const uint64_t row = row_bytes(t.format, t.cols);
    for (size_t i = 0; i < parts.size(); ++i) {
      core.upload(t, i, data.subspan(parts[i].row_begin * row, parts[i].bytes));
      done += parts[i].bytes;
      if (progress) progress(done, total);
    }
    // upload() has copied the bytes (into staging, or into mapped Gtt memory):
    // the file's pages of this tensor can go (peak RSS: a tensor, not the file).
    g.release(data);
  }
  return {"GGUF", total, expected.size(), 0, 0};
}

inline LoadReport load_hf(EngineCore& core, const std::filesystem::path& dir,
                          const LoadProgress& progress) {
  const auto config_path = dir / "config.json";
  if (!std::filesystem::exists(config_path))
    throw Error(dir.string() + ": no config.json (a Hugging Face model directory has one)");
  const io::HfTextConfig hf = io::parse_hf_config(config_path);
  io::check_gemma3_supported(hf, config_path.string());
  const std::string src = dir.filename().string() + "/config.json";
  check_dims(dims_from_hf(hf, core.config().model, src), core.config().model, src, false);

  const auto st = io::SafetensorsModel::open(dir);
  const auto& L = core.layout();
  const std::string ssrc = dir.filename().string();

  // Resolve and check every tensor before converting any.
  struct Source {
    const TensorSlot* slot;
    const io::SafeTensor* tensor;
    SourceType type;
  };
  std::vector<Source> sources;
  std::set<std::string> used;
  uint64_t total = 0;
  for (const TensorSlot& t : L.tensors) {
    if (t.arena != Arena::Weights) continue;
    // A separate LM head converts the embedding's source rows.
    const std::string gguf = (t.role == Role::LmHead ? L.weight(Role::Embedding) : t).gguf_name();
    const io::SafeTensor* f = nullptr;
    for (auto layout : {io::HfLayout::CausalLM, io::HfLayout::Multimodal, io::HfLayout::MultimodalLegacy})
      if (!f) f = st.find(io::gguf_to_hf_name(gguf, layout));
    const std::string hf_name = io::gguf_to_hf_name(gguf);
    if (!f) throw Error(ssrc + ": tensor '" + hf_name + "' is missing");
    SourceType type;
    if (f->dtype == "F32") type = SourceType::F32;
    else if (f->dtype == "BF16") type = SourceType::BF16;
    else if (f->dtype == "F16") type = SourceType::F16;
    else throw Error(ssrc + ": tensor '" + f->name + "' has dtype " + f->dtype +
                     "; expected BF16, F16 or F32");
    const std::vector<uint64_t> want = t.rows == 1 ? std::vector<uint64_t>{t.cols}
                                                   : std::vector<uint64_t>{t.rows, t.cols};
    // Embedding rows past the text vocabulary (image soft tokens) are not loaded.
    const bool extra_rows = (t.role == Role::Embedding || t.role == Role::LmHead) && f->shape.size() == 2 &&
                            f->shape[0] >= t.rows && f->shape[1] == t.cols;
    if (f->shape != want && !extra_rows)
      throw Error(ssrc + ": tensor '" + f->name + "' has shape " + shape_text(f->shape) +
                  ", this engine expects " + shape_text(want));
    used.insert(f->name);
    sources.push_back({&t, f, type});  // (the embedding twice with a separate LM head)
    total += t.bytes;
  }
  size_t skipped = 0;
  for (const auto& f : st.tensors()) {
    if (used.count(f.name)) continue;
    switch (io::classify_hf_tensor(f.name)) {
      case io::HfTensorKind::Vision: ++skipped; break;
      case io::HfTensorKind::Text:
        // A tied checkpoint may still store lm_head.weight (a copy of the embedding).
        if (f.name.ends_with("lm_head.weight") && hf.tie_word_embeddings) {
          ++skipped;
          break;
        }
        throw Error(ssrc + ": tensor '" + f.name + "' is not used by a tied-embedding Gemma 3 "
                    "text model");
      case io::HfTensorKind::Unknown:
        throw Error(ssrc + ": unexpected tensor '" + f.name + "' (not part of Gemma 3)");
    }
  }

  uint64_t done = 0;
  for (const auto& s : sources) {
    const TensorSlot& t = *s.slot;
    const uint64_t elem = s.type == SourceType::F32 ? 4 : 2;
    const float add = is_norm(t.role) ? 1.0f : 0.0f;  // HF stores w, the engine 1 + w
    const auto parts = L.parts_of(t);
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto rows = s.tensor->data.subspan(parts[i].row_begin * t.cols * elem,
                                               parts[i].rows * t.cols * elem);
      core.convert(t, i, rows, s.type, add);
      done += parts[i].bytes;
      if (progress) progress(done, total);
    }
  }
  return {"safetensors", total, sources.size(), skipped, 0};
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
  if (std::filesystem::is_directory(path, ec)) {
    r = detail::load_hf(core, path, progress);
  } else if (path.filename() == "config.json") {
    r = detail::load_hf(core, path.parent_path(), progress);
  } else {
    char magic[4] = {};
    std::ifstream(path, std::ios::binary).read(magic, 4);
    if (std::string_view(magic, 4) != "GGUF")
      throw Error(path.string() + ": not a GGUF file (and not a Hugging Face directory with "
                  "config.json)");
    r = detail::load_gguf(core, path, progress);
  }
  core.finish_uploads();  // here, not in the guard, so that a device error is reported
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace unicorn
