// Gemma 3 27B, Q4_0 weights with an F16 embedding (Google's QAT GGUF), 32K context.
#pragma once
#include "unicorn/engine.hpp"
#include "unicorn/gemma3.hpp"
namespace unicorn {
using Gemma3_27B = Engine<deployments::Gemma3_27B_QAT>;
// The same, drafted by Gemma 3 270M or 1B (LoadOptions::draft: docs/speculative.md).
using Gemma3_27B_Draft270M = Engine<deployments::Gemma3_27B_QAT_Draft270M>;
using Gemma3_27B_Draft1B = Engine<deployments::Gemma3_27B_QAT_Draft1B>;
}  // namespace unicorn
