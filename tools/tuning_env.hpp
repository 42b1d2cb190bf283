// tools/tuning_env.hpp — the one place the programs, the benchmark and the
// tests read UNICORN_* variables for what the library takes as values
// (the library reads none of them itself).
//
//   UNICORN_PIPELINE_CACHE=DIR|off      the pipeline cache folder (EngineOptions::pipeline_cache);
//                                       unset: $XDG_CACHE_HOME/unicorn, else ~/.cache/unicorn
//   UNICORN_VALIDATION=1                the Khronos validation layer (gpu::DeviceOptions)
//   UNICORN_COOPMAT=0                   no tensor-unit prefill (gpu::DeviceOptions)
//   UNICORN_DEVICE=N                    the Nth Vulkan device (gpu::DeviceOptions)
//   UNICORN_INJECT_FAULT=device-lost@N  test builds (UNICORN_FAULT_INJECTION) only:
//                       out-of-memory@N  the Nth submission fails (gpu::inject_faults)
//   Tuning, for sweeps (engine/options.hpp; notes/tuning.md):
//   UNICORN_MATVEC_ROWS, _LANES, _UNROLL, _INT_DOT, _DOT_SPLIT_K, _DOT_SPLIT_ROWS   UNICORN_BATCH_TILE, UNICORN_BATCH_ROWS
//   UNICORN_DECODE_ATTENTION_PREP, UNICORN_DECODE_NORM_WAIT,
//   UNICORN_DECODE_ATTENTION_WAIT
//   UNICORN_COOP_TILE, _WAVE, _SPLIT_STEPS    UNICORN_SPLITK_TILE, _SPLIT_STEPS
//   UNICORN_ATTENTION_ROWS, UNICORN_ATTENTION_COOP_ROWS, _KEYS, UNICORN_ATTENTION_QUERY_HEADS
// Beside it, tools/ollama_env.hpp reads OLLAMA_MODELS (else HOME): where
// --model ollama:NAME is looked up.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "unicorn/base/error.hpp"
#include "unicorn/engine/options.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/device_error.hpp"

namespace unicorn::tools {

inline std::optional<uint32_t> env_u32(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*end || n > UINT32_MAX) throw Error(std::string(name) + "=" + v + ": expected a whole number");
  return uint32_t(n);
}

// The defaults, with each UNICORN_* variable that is set in its place.
inline Tuning tuning_from_env(Tuning t = {}) {
  const auto set = [](const char* name, uint32_t& field) {
    if (const auto v = env_u32(name)) field = *v;
  };
  set("UNICORN_MATVEC_ROWS", t.matvec_rows);
  set("UNICORN_MATVEC_LANES", t.matvec_lanes);
  set("UNICORN_MATVEC_UNROLL", t.matvec_unroll);
  if (const auto v = env_u32("UNICORN_MATVEC_INT_DOT")) {  // 0 never, 1 where supported, 2 where accelerated
    if (*v > 2) throw Error(std::string("UNICORN_MATVEC_INT_DOT=") + std::to_string(*v) + ": expected 0, 1 or 2");
    t.matvec_int_dot = Tuning::IntDot(*v);
  }
  set("UNICORN_MATVEC_DOT_SPLIT_K", t.matvec_dot_split_in_features);
  set("UNICORN_MATVEC_DOT_SPLIT_ROWS", t.matvec_dot_split_rows);
  set("UNICORN_DECODE_ATTENTION_PREP", t.decode_attention_prep);
  set("UNICORN_DECODE_NORM_WAIT", t.decode_norm_wait);
  set("UNICORN_DECODE_ATTENTION_WAIT", t.decode_attention_wait);
  set("UNICORN_BATCH_TILE", t.batch_tile);
  set("UNICORN_BATCH_ROWS", t.batch_accumulators);
  set("UNICORN_COOP_TILE", t.coop_tile_index);
  set("UNICORN_COOP_WAVE", t.coop_wave);
  set("UNICORN_COOP_SPLIT_STEPS", t.coop_split_steps);
  set("UNICORN_SPLITK_TILE", t.splitk_tile_index);
  set("UNICORN_SPLITK_SPLIT_STEPS", t.splitk_split_steps);
  if (const auto v = env_u32("UNICORN_ATTENTION_ROWS")) t.attention_rows = *v;
  set("UNICORN_ATTENTION_COOP_ROWS", t.attention_coop_rows);
  set("UNICORN_ATTENTION_COOP_KEYS", t.attention_coop_keys);
  set("UNICORN_ATTENTION_QUERY_HEADS", t.attention_query_heads);
  return t;
}

// $UNICORN_PIPELINE_CACHE (off: none), else $XDG_CACHE_HOME/unicorn, else
// ~/.cache/unicorn; empty when none applies.
inline std::filesystem::path pipeline_cache_dir() {
  if (const char* v = std::getenv("UNICORN_PIPELINE_CACHE"); v && *v)
    return std::string_view(v) == "off" ? std::filesystem::path{} : std::filesystem::path(v);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "unicorn";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "unicorn";
  return {};
}

// Whether a flag variable is set to anything but "" or "0".
inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string_view(v) != "0";
}

// The device as the tools open it: UNICORN_VALIDATION=1 turns the validation
// layer on, UNICORN_COOPMAT=0 tensor-unit prefill off, UNICORN_DEVICE=N picks
// the Nth Vulkan device.
inline gpu::DeviceOptions device_from_env() {
  gpu::DeviceOptions o;
  o.validation = env_flag("UNICORN_VALIDATION");
  const char* coopmat = std::getenv("UNICORN_COOPMAT");
  o.coopmat = !(coopmat && std::string_view(coopmat) == "0");
  if (const char* want = std::getenv("UNICORN_DEVICE")) {
    char* end = nullptr;
    const unsigned long index = std::strtoul(want, &end, 10);
    if (*want == '\0' || *end != '\0' || index > 0xFFFF)
      throw Error(std::string("UNICORN_DEVICE: expected a device index, not '") + want + "'");
    o.index = uint32_t(index);
  }
  return o;
}

// Engine options as the tools run them: `o` with the pipeline cache folder,
// the tuning and the device from the environment.
inline EngineOptions engine_options_from_env(EngineOptions o = {}) {
  o.pipeline_cache = pipeline_cache_dir();
  o.tuning = tuning_from_env(o.tuning);
  o.device = device_from_env();
  return o;
}

// UNICORN_INJECT_FAULT, in builds with the test-only hook (and nothing in
// others): device-lost@N or out-of-memory@N.
inline void inject_faults_from_env() {
#ifdef UNICORN_FAULT_INJECTION
  const char* v = std::getenv("UNICORN_INJECT_FAULT");
  if (!v) return;
  const std::string_view s(v);
  const auto at = s.find('@');
  const std::string_view kind = s.substr(0, at);
  if (at == std::string_view::npos || (kind != "device-lost" && kind != "out-of-memory"))
    throw Error("UNICORN_INJECT_FAULT: expected device-lost@N or out-of-memory@N, not '" + std::string(s) + "'");
  gpu::inject_faults({kind == "device-lost" ? vk::Result::eErrorDeviceLost : vk::Result::eErrorOutOfDeviceMemory,
                      std::strtoul(v + at + 1, nullptr, 10)});
#endif
}

}  // namespace unicorn::tools
