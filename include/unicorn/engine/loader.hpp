// unicorn/engine/loader.hpp — fill an engine's weights from a GGUF file or a
// Hugging Face directory, after checking the file against the compiled layout
// (with the file's embedding format: EngineCore::hold_embedding_as).
//
// Every hyperparameter, and every tensor's name, shape and type, must match
// the engine; the first mismatch is an error that names the key or tensor,
// both values, and — when the file is another official
// Gemma 3 size — the binary to use instead. Nothing is uploaded before the
// whole file has been checked.
//
// Both kinds of file are a WeightFile (engine/weight_file.hpp, which also
// makes the checks) that yields each tensor's (name, type, shape, bytes) to
// one loop, load_weights(). GGUF tensors are already in the
// device format and are copied as they are. Safetensors (BF16/F16/F32) are
// converted on the GPU to the scheme's format; their norm weights become
// 1 + w, the GGUF convention the shaders read.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include "unicorn/base/linkage.hpp"
#include "unicorn/engine/core.hpp"
#include "unicorn/engine/weight_file.hpp"

namespace unicorn {

struct LoadReport {
  std::string format;   // "GGUF" or "safetensors"
  uint64_t bytes = 0;   // weight bytes placed on the device
  size_t tensors = 0;   // tensors read from the file
  size_t skipped = 0;   // vision-tower / projector tensors not loaded
  double seconds = 0;
  // Where they went: opening and checking the file against the layout, then
  // the staging ring's waits, copies and submissions (gpu::StagingRing::Timing;
  // copies into mapped Gtt memory are in none of them).
  double check_seconds = 0;
  gpu::StagingRing::Timing staging;
  // Where the model's own tokenizer is (the GGUF file, or the Hugging Face
  // directory with tokenizer.json), for text::model_tokenizer; empty when the
  // file carries none.
  std::filesystem::path vocabulary;
};

// Called as loading proceeds with (bytes done, bytes total).
using LoadProgress = std::function<void(uint64_t, uint64_t)>;

namespace detail {

// How convert() reads a tensor stored in a float format.
SourceType source_type_of(Format f);

// The one loader loop, for either kind of file. Every weight tensor is found
// and checked (check_file: type, shape) before any is uploaded; then each
// goes to the device part by part, copied as it is or converted on the GPU.
LoadReport load_weights(EngineCore& core, const WeightFile& file, const LoadProgress& progress,
                        std::chrono::steady_clock::time_point file_opened);

}  // namespace detail

// Loads a GGUF file, or a Hugging Face directory (config.json + safetensors).
LoadReport load_model(detail::EngineCore& core, const std::filesystem::path& path,
                      const LoadProgress& progress = {});

}  // namespace unicorn

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::detail {

UNICORN_DECL SourceType source_type_of(Format f) {
  switch (f) {
    case Format::F32: return SourceType::F32;
    case Format::F16: return SourceType::F16;
    case Format::BF16: return SourceType::BF16;
    default: throw Error("internal: " + std::string(format_name(f)) + " is not a float format");
  }
}

UNICORN_DECL LoadReport load_weights(EngineCore& core, const WeightFile& file, const LoadProgress& progress,
                                     std::chrono::steady_clock::time_point file_opened) {
  const auto& L = core.layout();
  const ModelDims& engine = core.config().model;
  FileCheck check = check_file(file, engine, L);
  if (!check.dims_differences.empty())
    throw Error(check.first() + official_size_hint(file.dims(engine)));
  if (!check.fits()) throw Error(check.first());
  if (check.embedding) {  // the file's embedding format, not the engine's: lay the engine out for it
    core.hold_embedding_as(*check.embedding);
    check = check_file(file, engine, L);
    if (!check.fits() || check.embedding) throw Error("internal: the engine laid out for " + file.label() +
                                                      "'s embedding does not fit it: " + (check.fits() ? "" : check.first()));
  }
  const size_t skipped = file.check_unused(check.used);
  const auto checked = std::chrono::steady_clock::now();

  uint64_t done = 0;
  for (const PlannedTensor& p : check.plan) {
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
      if (progress) progress(done, check.bytes);
    }
    // upload() and convert() have copied the bytes (into staging, or into
    // mapped Gtt memory): the file's pages of this tensor can go (peak RSS:
    // a tensor, not the file).
    file.release(p.tensor.data);
  }
  LoadReport r{file.format(), check.bytes, check.used.size(), skipped};
  r.check_seconds = std::chrono::duration<double>(checked - file_opened).count();
  r.vocabulary = file.vocabulary();
  return r;
}

}  // namespace unicorn::detail

namespace unicorn {

UNICORN_DECL LoadReport load_model(detail::EngineCore& core, const std::filesystem::path& path,
                                   const LoadProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
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
  r = detail::load_weights(core, *detail::open_weight_file(path), progress, start);
  core.finish_uploads();  // here, not in the guard, so that a device error is reported
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.staging = core.upload_timing();
  return r;
}

}  // namespace unicorn

#endif  // UNICORN_DEFINE_HERE
