// unicorn/engine/pick.hpp — which of a binary's compiled engines runs a model
// file, or why none does.
//
// A binary may hold several deployments (unicorn-generate holds every official
// size in the formats people download). The file's hyperparameters and every
// tensor's type and shape are checked against each (engine/weight_file.hpp's
// check_file, the loader's own checks); the first that fits runs it, and for a
// Hugging Face directory, whose floats are converted on the GPU, the one that
// converts the fewest matrices (a BF16 directory runs in the BF16 engine).
// A file that fits none is refused, naming the nearest engine, how it differs,
// and the unicorn_add_engine line that compiles one for the file.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <span>
#include <string>

#include "unicorn/base/error.hpp"
#include "unicorn/engine/weight_file.hpp"
#include "unicorn/layout/compiled_deployment.hpp"
#include "unicorn/layout/print.hpp"

namespace unicorn {

// An engine in words: "gemma3-27b, Q4_K_M (embedding Q6_K, ...), context 131072
// (32768 by default)", and ", 4 streams" where it has several (a server's slots).
inline std::string engine_text(const CompiledDeployment& d) {
  const DeploymentConfig& c = d.config;
  const std::string_view name = scheme_name(c.scheme);
  return std::string(c.model.name) + ", " + (name.empty() ? "" : std::string(name) + " (") + scheme_text(c) +
         (name.empty() ? "" : ")") + ", context " + std::to_string(c.max_context) +
         (c.context_by_default() < c.max_context ? " (" + std::to_string(c.context_by_default()) + " by default)"
                                                  : "") +
         (c.streams > 1 ? ", " + std::to_string(c.streams) + " streams" : "");
}

// The unicorn_add_engine call that compiles an engine for the file at `path`.
inline std::string add_engine_line(const std::filesystem::path& path, const detail::WeightFile& file) {
  const std::string abs = std::filesystem::absolute(path).lexically_normal().string();
  if (file.converted()) {  // a Hugging Face directory: an engine that keeps its dtype
    const std::string dir = std::filesystem::is_directory(path) ? abs : std::filesystem::path(abs).parent_path().string();
    const auto embedding = file.find("token_embd.weight");
    const std::string quant = embedding && embedding->format ? embedding->type_name : "BF16";
    return "unicorn_add_engine(my-engine CONFIG " + dir + "/config.json QUANT " + quant + ")";
  }
  return "unicorn_add_engine(my-engine GGUF " + abs + ")";
}

// A model file (GGUF, or a Hugging Face directory) read once, to ask which
// compiled engines run it: every hyperparameter, and every tensor's type and
// shape, as the loader checks them.
class ModelFile {
 public:
  explicit ModelFile(const std::filesystem::path& path) : file_(detail::open_weight_file(path)) {}
  bool runs_in(const CompiledDeployment& engine) const {
    return detail::check_file(*file_, engine.config.model, engine.layout).fits();
  }

 private:
  std::unique_ptr<detail::WeightFile> file_;
};

// Engine `d`'s configuration as it holds the file at `path`: with the file's
// embedding format (Scheme::takes_embedding; the loader lays the engine out so).
inline DeploymentConfig config_for_file(const CompiledDeployment& d, const std::filesystem::path& path) {
  DeploymentConfig config = d.config;
  const auto file = detail::open_weight_file(path);
  if (const auto embedding = detail::check_file(*file, d.config.model, d.layout).embedding)
    config.scheme = config.scheme.with_embedding(*embedding);
  return config;
}

// Engine `d`'s layout as it holds the file at `path` (--layout with --model).
inline void print_layout_for_file(std::ostream& os, const CompiledDeployment& d, const std::filesystem::path& path) {
  const DeploymentConfig held = config_for_file(d, path);
  print_layout(os, held, RunLayout(held).view());
}

// ", holding the file's Q6_K embedding" where engine `d` holds the file at
// `path` with another embedding than its own; else "" (the programs' engine line).
inline std::string held_embedding_words(const CompiledDeployment& d, const std::filesystem::path& path) {
  const Format held = config_for_file(d, path).scheme.embedding;
  return held == d.config.scheme.embedding ? ""
                                           : ", holding the file's " + std::string(format_name(held)) + " embedding";
}

// The index in `engines` of the one that runs the model at `path` (`binary`
// names the program in the refusal).
inline size_t pick_engine(std::span<const CompiledDeployment> engines, const std::filesystem::path& path,
                          const std::string& binary) {
  if (engines.empty()) throw Error("internal: " + binary + " has no engine");
  const auto file = detail::open_weight_file(path);
  size_t best = engines.size(), nearest = 0;
  size_t best_conversions = 0, nearest_dims = SIZE_MAX, nearest_tensors = SIZE_MAX;
  std::string nearest_first;
  for (size_t i = 0; i < engines.size(); ++i) {
    const detail::FileCheck c = detail::check_file(*file, engines[i].config.model, engines[i].layout);
    if (c.fits()) {
      if (best == engines.size() || c.conversions < best_conversions) best = i, best_conversions = c.conversions;
      continue;
    }
    // Fewest differing hyperparameters, then (same dimensions) fewest differing tensors.
    const size_t dims = c.dims_differences.size(), tensors = c.tensor_differences.size();
    if (dims < nearest_dims || (dims == nearest_dims && tensors < nearest_tensors)) {
      nearest = i, nearest_dims = dims, nearest_tensors = tensors;
      nearest_first = c.first();
    }
  }
  if (best < engines.size()) return best;
  const size_t more = nearest_dims + nearest_tensors - 1;
  throw Error(path.string() + ": none of the " + std::to_string(engines.size()) + " engines compiled into " + binary +
              " runs this file (" + binary + " --engines lists them). The nearest, " + engine_text(engines[nearest]) +
              ", differs in " + std::to_string(more + 1) + (more ? " ways, first: " : " way: ") + nearest_first +
              ". Compile an engine for the file with `" + add_engine_line(path, *file) +
              "` in a CMake project that uses unicorn (README: \"An engine for your own file\")");
}

}  // namespace unicorn
