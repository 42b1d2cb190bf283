// Gemma 3 270M, Q4_0 weights with an F16 embedding (Google's QAT GGUF), 32K context.
#pragma once
#include "unicorn/engine.hpp"
#include "unicorn/gemma3.hpp"
namespace unicorn { using Gemma3_270M = Engine<deployments::Gemma3_270M_QAT>; }
