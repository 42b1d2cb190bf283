// unicorn/separate_compilation.hpp — the engine's host code, for exactly one
// translation unit of a build in which every translation unit that includes
// unicorn's headers defines UNICORN_SEPARATE_COMPILATION (base/linkage.hpp). CMake
// builds do this with unicorn_link_engine_code(<target>)
// (cmake/UnicornEngine.cmake), whose library compiles cmake/engine_code.cpp.
#pragma once

#if !defined(UNICORN_SEPARATE_COMPILATION)
#error "unicorn/separate_compilation.hpp compiles the engine's code once for a build that defines UNICORN_SEPARATE_COMPILATION in every translation unit (unicorn/base/linkage.hpp); a header-only build needs no such file"
#elif defined(UNICORN_LINKAGE_INCLUDED)
#error "unicorn/separate_compilation.hpp must come before any other unicorn header in its translation unit"
#else
#define UNICORN_COMPILING_ENGINE_CODE 1

#include "unicorn/engine/check_tensors.hpp"
#include "unicorn/engine/definitions.hpp"
#include "unicorn/engine/loader.hpp"
#include "unicorn/engine/weight_file.hpp"
#include "unicorn/generation/generate.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"
#include "unicorn/gpu/pipeline_cache.hpp"
#include "unicorn/gpu/staging.hpp"
#include "unicorn/grammar/grammar.hpp"
#include "unicorn/grammar/json_schema.hpp"
#include "unicorn/grammar/matcher.hpp"
#include "unicorn/grammar/parse_states.hpp"
#include "unicorn/grammar/vocabulary.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/hf_config.hpp"
#include "unicorn/io/ollama.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/layout/print.hpp"
#include "unicorn/model/from_gguf.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/load_tokenizer.hpp"
#include "unicorn/text/tokenizer.hpp"
#endif
