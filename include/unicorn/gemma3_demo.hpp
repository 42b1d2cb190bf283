// The built-in demo model's engine (models/gemma3-demo.gguf, tools/train_demo):
// what examples/host_app and the README's host app run with no download.
#pragma once
#include "unicorn/engine.hpp"
#include "unicorn/gemma3.hpp"
namespace unicorn {
using Gemma3_Demo = Engine<deployments::Gemma3_Demo>;
// The same, drafted by kGemma3DemoDraft (LoadOptions::draft: docs/speculative.md).
using Gemma3_Demo_Speculative = Engine<deployments::Gemma3_Demo_Speculative>;
}  // namespace unicorn
