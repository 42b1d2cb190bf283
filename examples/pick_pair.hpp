// Which of a program's compiled engines runs a model file, with a draft's
// file or without: unicorn-generate's and unicorn-server's --draft pick the
// speculative pair (unicorn/gemma3.hpp's Gemma3_Pairs, Gemma3_Server_Pairs)
// whose model runs --model and whose draft runs --draft; without --draft, an
// engine without a draft, as engine/pick.hpp picks.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/layout/compiled_deployment.hpp"

namespace unicorn::examples {

// An engine in words, with its draft where it has one (--engines).
inline std::string engine_words(const unicorn::CompiledDeployment& e) {
  return unicorn::engine_text(e) + (e.draft ? "; drafted by " + unicorn::engine_text(*e.draft) + ", up to " +
                                                  std::to_string(e.config.draft_max) + " tokens a round"
                                            : "");
}

// The engine of `engines` that runs `model`: with no `draft`, one without a
// draft (pick_engine's choice among them, or its refusal); with one, the pair
// whose model runs `model` and whose draft runs `draft`, or why none does.
inline size_t pick_for(std::span<const unicorn::CompiledDeployment> engines, const std::filesystem::path& model,
                       const std::filesystem::path& draft, const std::string& binary) {
  std::vector<unicorn::CompiledDeployment> some;
  std::vector<size_t> index;
  for (size_t i = 0; i < engines.size(); ++i)
    if ((engines[i].draft != nullptr) == !draft.empty()) some.push_back(engines[i]), index.push_back(i);
  if (draft.empty()) return some.empty() ? unicorn::pick_engine(engines, model, binary)
                                         : index[unicorn::pick_engine(some, model, binary)];
  if (some.empty())
    throw unicorn::Error("--draft: none of the engines compiled into " + binary +
                         " has a draft (a speculative pair: docs/speculative.md)");
  // The pairs whose model runs the file.
  const unicorn::ModelFile model_file(model);
  std::vector<size_t> fits;
  std::string models;
  for (size_t i = 0; i < some.size(); ++i) {
    if (model_file.runs_in(some[i])) fits.push_back(i);
    models += (models.empty() ? "" : "; ") + unicorn::engine_text(some[i]);
  }
  if (fits.empty())
    throw unicorn::Error(model.string() + ": no speculative pair compiled into " + binary +
                         " runs this file as its model; their models are: " + models + " (" + binary +
                         " --engines lists every pair)");
  const unicorn::ModelFile draft_file(draft);
  std::string drafts;
  for (size_t i : fits) {
    if (draft_file.runs_in(*some[i].draft)) return index[i];
    drafts += (drafts.empty() ? "" : "; ") + unicorn::engine_text(*some[i].draft);
  }
  throw unicorn::Error(draft.string() + ": no draft compiled for " + unicorn::engine_text(some[fits[0]]) + " into " +
                       binary + " runs this file; its drafts are: " + drafts + " (" + binary +
                       " --engines lists every pair)");
}

}  // namespace unicorn::examples
