// unicorn/gpu/device_error.hpp — what a queue submission that fails becomes:
// a DeviceError saying what the device reported (lost, out of memory), so the
// generator prints it with what was running and the server ends the requests
// in flight with a 500 and exits for its supervisor.
//
// Test builds only (CMake option UNICORN_FAULT_INJECTION, which defines the
// macro of the same name): gpu::inject_faults({result, N}) makes the Nth
// submission of recorded work (gpu::Stream: forward passes and read-backs,
// counted from 1 over the process; uploads are not counted) fail as a driver
// would; a lost device stays lost. The programs set it from
// UNICORN_INJECT_FAULT=device-lost@N or out-of-memory@N (tools/tuning_env.hpp).
// Release builds compile none of it.
#pragma once

#include <atomic>
#include <string>

#include "unicorn/base/error.hpp"
#include "unicorn/gpu/vulkan.hpp"


namespace unicorn::gpu {

class DeviceError : public Error {
 public:
  DeviceError(vk::Result result, const std::string& message) : Error(message), result_(result) {}
  vk::Result result() const { return result_; }
  // Nothing more can run on a lost device: the process must start over.
  bool lost() const { return result_ == vk::Result::eErrorDeviceLost; }

 private:
  vk::Result result_;
};

#ifdef UNICORN_FAULT_INJECTION
// The fault to inject, a value the program sets before any submission (the
// tools read it from UNICORN_INJECT_FAULT: tools/tuning_env.hpp): submission
// `at` of recorded work (counted from 1 over the process) fails with `result`,
// and with a lost device every one after it too.
struct FaultPlan {
  vk::Result result = vk::Result::eSuccess;  // eErrorDeviceLost or eErrorOutOfDeviceMemory
  unsigned long at = 0;                      // 0: none
};
inline FaultPlan& fault_plan() {
  static FaultPlan plan;
  return plan;
}
inline void inject_faults(const FaultPlan& plan) { fault_plan() = plan; }

// Throws the planned fault at its submission.
inline void inject_fault() {
  static std::atomic<unsigned long> submissions{0};
  const unsigned long n = ++submissions;
  const FaultPlan& plan = fault_plan();
  if (plan.at == 0) return;
  const bool hit = plan.result == vk::Result::eErrorDeviceLost ? n >= plan.at : n == plan.at;
  if (!hit) return;
  if (plan.result == vk::Result::eErrorDeviceLost) throw vk::DeviceLostError("injected (gpu::inject_faults)");
  throw vk::OutOfDeviceMemoryError("injected (gpu::inject_faults)");
}
#endif

// What a failed submission's result means, in words and by name.
inline std::string device_error_text(vk::Result r) {
  switch (r) {
    case vk::Result::eErrorDeviceLost: return "the device was lost (VK_ERROR_DEVICE_LOST)";
    case vk::Result::eErrorOutOfDeviceMemory: return "out of device memory (VK_ERROR_OUT_OF_DEVICE_MEMORY)";
    case vk::Result::eErrorOutOfHostMemory: return "out of host memory (VK_ERROR_OUT_OF_HOST_MEMORY)";
    default: return "the device failed (" + vk::to_string(r) + ")";
  }
}

// Which submissions a fault may be injected into (inject_faults).
enum class Submission { Work, Upload, Wait };  // Wait: for work already submitted (never injected)

// Runs `submit` (a queue submission and its wait), turning a Vulkan error into
// a DeviceError that names the device. `lost` is raised on VK_ERROR_DEVICE_LOST.
template <class F>
void checked_submit(const std::string& device, std::atomic<bool>& lost, Submission kind, F&& submit) {
  try {
#ifdef UNICORN_FAULT_INJECTION
    if (kind == Submission::Work) inject_fault();
#endif
    submit();
  } catch (const vk::SystemError& e) {
    const auto r = vk::Result(e.code().value());
    if (r == vk::Result::eErrorDeviceLost) lost = true;
    throw DeviceError(r, "gpu: " + device + ": " + device_error_text(r) +
                             (kind == Submission::Upload ? " during an upload" : ""));
  }
}

}  // namespace unicorn::gpu
