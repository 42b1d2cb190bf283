// unicorn/gpu/device_options.hpp — what is chosen about the Vulkan device when
// it is opened (gpu::Context, and an engine that opens its own:
// EngineOptions::device). Values only: the library reads no environment; the
// tools fill these from UNICORN_VALIDATION, UNICORN_COOPMAT and UNICORN_DEVICE
// (tools/tuning_env.hpp).
#pragma once

#include <cstdint>
#include <optional>

namespace unicorn::gpu {

struct DeviceOptions {
  // The Khronos validation layer on every call; any error or warning it
  // reports throws (the tests run with it).
  bool validation = false;
  // Whether prefill may run on the device's tensor units (false: fp32 tiles
  // everywhere, as on a device without them).
  bool coopmat = true;
  // Which Vulkan device, by its index in the instance's list; empty: a
  // discrete GPU before an integrated one before any other.
  std::optional<uint32_t> index;
};

}  // namespace unicorn::gpu
