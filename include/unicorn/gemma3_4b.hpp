// Gemma 3 4B, Q4_0 weights with an F16 embedding (Google's QAT GGUF), 32K context.
#pragma once
#include "unicorn/engine.hpp"
#include "unicorn/gemma3.hpp"
namespace unicorn {
using Gemma3_4B = Engine<deployments::Gemma3_4B_QAT>;
// The same, drafted by Gemma 3 270M (LoadOptions::draft: docs/speculative.md).
using Gemma3_4B_Draft270M = Engine<deployments::Gemma3_4B_QAT_Draft270M>;
}  // namespace unicorn
