// unicorn/gpu/context.hpp — Vulkan instance, device, queue and memory.
//
// Any Vulkan 1.2 device with 16-bit storage runs the engine. The context picks a
// device (DeviceOptions::index overrides; otherwise discrete > integrated >
// virtual > CPU), opens its compute queues (two where the family has them: a
// server's prefill passes run on the second beside the decode steps on the
// first), and exposes the limits the layout
// and the allocator respect. With DeviceOptions::validation the Khronos validation
// layer is enabled and every message of severity error is counted, so tests can
// fail on any validation error.
//
// Prefill's linear layers can run on tensor units when the device offers
// VK_KHR_cooperative_matrix with fp16 x fp16 -> fp32 matrices of a shape
// shaders/matmul_coop.comp can tile (DeviceInfo::coopmat); the context then
// enables the extension and the features that kernel needs, and otherwise the
// portable fp32 matmul runs. It is the default where the device has such
// matrices; Context(validation, /*coopmat=*/false) turns it off (the tools:
// UNICORN_COOPMAT=0). It rounds activations to fp16
// (saturating at +-65504), the numerics of llama.cpp's Vulkan path, which on
// the H100 moves the golden test's prefill logits up to about 3.5e-3 of their
// scale from transformers' (the fp32 path: 7e-7; tests/model holds each path
// to its own tolerance).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/gpu/coopmat_khr.hpp"
#include "unicorn/gpu/device_options.hpp"
#include "unicorn/gpu/vulkan.hpp"

#if defined(UNICORN_KEEP_VULKAN_DRIVERS_LOADED)
#include <dlfcn.h>
#include <link.h>

#include <cstring>
#endif

namespace unicorn::gpu {

struct DeviceInfo {
  std::string name;
  vk::PhysicalDeviceType type;
  // A CPU device (lavapipe): a subgroup is one thread's SIMD vector and its
  // memory is the host's (kernels::matvec_lanes, the bandwidth probes).
  bool cpu() const { return type == vk::PhysicalDeviceType::eCpu; }
  uint32_t vendor_id;
  uint64_t max_storage_buffer_range;
  uint64_t max_memory_allocation_size;
  uint64_t min_storage_buffer_offset_alignment;
  uint32_t subgroup_size;
  uint32_t max_shared_memory;
  uint32_t max_workgroup_count[3];
  float timestamp_period_ns;
  uint64_t device_local_heap_bytes;
  bool unified_memory;  // a DEVICE_LOCAL type is also HOST_VISIBLE (APUs, lavapipe)
  // Cooperative matrices (VK_KHR_cooperative_matrix), enabled at device creation
  // when present and usable by matmul_coop: fp16 A/B, fp32 C, subgroup scope.
  bool coopmat;
  uint32_t coop_m, coop_n, coop_k;  // the shape chosen from the device's list (M tokens, N rows)
  std::string coopmat_note;         // why not, when coopmat is false
  // 4-way signed byte dot products in shaders (VK_KHR_shader_integer_dot_product,
  // enabled when present), and whether the device runs them in hardware (dp4a)
  // rather than emulating them: decode's matvec_dot kernels run where they are.
  bool int_dot = false;
  bool int_dot_accelerated = false;
  // Multiprocessors (NVIDIA's SMs, AMD's compute units, ARM's shader cores; a
  // CPU device's threads): how many large workgroups run at once, which the
  // tile and K-split choices fill in waves. From the driver where it says
  // (multiprocessors_source names how), else kAssumedMultiprocessors.
  uint32_t multiprocessors = 0;
  std::string multiprocessors_source;
};

// A device that does not say how many multiprocessors it has is taken to
// have this many: the H100's, on which the tile and split choices were measured.
inline constexpr uint32_t kAssumedMultiprocessors = 132;

// The most shared memory a matmul_coop tile may declare (bytes): 48 KiB, what
// Vulkan devices commonly offer. Every kernels::kCoopTiles tile fits (128 x 128
// with two stages of 256 rows of 80 bytes: 40 KiB; 128 x 256 with one stage:
// 30 KiB); engine/core.hpp checks this against the tiles.
inline constexpr uint32_t kCoopSharedBytes = 48 * 1024;

// Which kernel prefill's linear layers run, in words (unicorn-bench prints it).
std::string prefill_linear_path(const DeviceInfo& info);


class KernelCache;  // gpu/kernel.hpp

class Context {
 public:
  // Messages of severity error seen by the validation layer since start-up.
  uint32_t validation_errors() const { return validation_errors_.load(); }
  bool validation_enabled() const { return validation_; }
  const DeviceInfo& info() const { return info_; }
  const vk::raii::Device& device() const { return device_; }
  const vk::raii::PhysicalDevice& physical() const { return physical_; }
  // Queue 0 runs everything but a server's concurrent prefill passes; queue
  // 1 is queue 0 again on a device that has no second queue.
  const vk::raii::Queue& queue(uint32_t index = 0) const { return index && has_second_queue() ? second_queue_ : queue_; }
  uint32_t queue_family(uint32_t index = 0) const { return index && has_second_queue() ? second_family_ : queue_family_; }
  // The families buffers are shared by (concurrently: no ownership transfers),
  // when the second queue is of another family.
  std::vector<uint32_t> sharing_families() const {
    if (!has_second_queue() || second_family_ == queue_family_) return {};
    return {queue_family_, second_family_};
  }
  // Whether queue(1) is a queue of its own, whose work may overlap queue 0's.
  bool has_second_queue() const { return has_second_queue_; }

  // Opens the device `options` choose (gpu/device_options.hpp).
  explicit Context(const DeviceOptions& options = {})
      : validation_(options.validation), allow_coopmat_(options.coopmat), device_index_(options.index) {
    create_instance();
    pick_physical_device();
    create_device();
  }

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // A memory type with all `required` flags; prefers one that also has
  // `preferred` and none of `avoided` (Gtt: host-visible, not device-local).
  uint32_t memory_type(uint32_t type_bits, vk::MemoryPropertyFlags required,
                       vk::MemoryPropertyFlags preferred = {},
                       vk::MemoryPropertyFlags avoided = {}) const {
    const auto props = physical_.getMemoryProperties();
    std::optional<uint32_t> fallback;
    for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
      if (!(type_bits & (1u << i))) continue;
      const auto flags = props.memoryTypes[i].propertyFlags;
      if ((flags & required) != required) continue;
      if ((flags & preferred) == preferred && !(flags & avoided)) return i;
      if (!fallback) fallback = i;
    }
    if (!fallback) throw Error("gpu: no memory type with the required properties on " + info_.name);
    return *fallback;
  }

  // Each memory heap: its size, and what this process may still allocate from
  // it (VK_EXT_memory_budget's heapBudget - heapUsage where the driver has the
  // extension, else the heap size).
  struct Heap {
    uint64_t size = 0;
    uint64_t available = 0;
    bool device_local = false;
  };
  std::vector<Heap> heaps() const;
  // Caps what heaps() reports as available at `bytes` per heap: the most
  // device memory this process may take (a GPU shared with other work; tests
  // that check the start-up refusal without filling a device).
  void limit_memory(uint64_t bytes) { memory_limit_ = bytes; }
  uint32_t heap_of_type(uint32_t type) const {
    return physical_.getMemoryProperties().memoryTypes[type].heapIndex;
  }
  bool has_memory_budget() const { return has_memory_budget_; }
  // Whether a submission reported VK_ERROR_DEVICE_LOST (gpu/device_error.hpp):
  // nothing more runs on this device; the process must start over.
  bool device_lost() const { return device_lost_; }
  std::atomic<bool>& device_lost_flag() const { return device_lost_; }

  // The pipelines of every engine on this context that keeps its pipeline
  // cache in `pipeline_dir` (EngineOptions::pipeline_cache; empty: none on
  // disk): an engine compiles only what no earlier one did, and the pipelines
  // live as long as the context. Defined in gpu/kernel.hpp.
  std::shared_ptr<KernelCache> kernel_cache(const std::filesystem::path& pipeline_dir) const;

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(
      VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
      const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    auto* self = static_cast<Context*>(user);
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
      self->validation_errors_++;
      std::cerr << "unicorn: Vulkan validation error: " << data->pMessage << "\n";
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
      std::cerr << "unicorn: Vulkan validation warning: " << data->pMessage << "\n";
    }
    return VK_FALSE;
  }

  void create_instance();

  static int type_rank(vk::PhysicalDeviceType t) {
    switch (t) {
      case vk::PhysicalDeviceType::eDiscreteGpu: return 0;
      case vk::PhysicalDeviceType::eIntegratedGpu: return 1;
      case vk::PhysicalDeviceType::eVirtualGpu: return 2;
      case vk::PhysicalDeviceType::eCpu: return 3;
      default: return 4;
    }
  }

  void pick_physical_device();

  void create_device();

  // Sets info_.int_dot and info_.int_dot_accelerated (the packed signed form
  // matvec_dot uses).
  void detect_int_dot();

  // Sets info_.coopmat and the shape, or says in coopmat_note why not.
  void detect_coopmat();

  // Sets info_.multiprocessors and where the count came from.
  void detect_multiprocessors();

  bool validation_;
  bool allow_coopmat_ = true;
  std::optional<uint32_t> device_index_;  // DeviceOptions::index
  std::atomic<uint32_t> validation_errors_{0};
  vk::raii::Context context_;
#if defined(UNICORN_KEEP_VULKAN_DRIVERS_LOADED)
  // Sanitizer builds only (UNICORN_SANITIZE): the drivers the loader opened
  // stay mapped after vkDestroyInstance. A driver's globals may still hold
  // memory when the loader unloads it (Debian 12's lavapipe, Mesa
  // 22.3.6-1+deb12u2, keeps 128 bytes so); LeakSanitizer then sees it
  // unreferenced, in a module already gone, which no suppression can name.
  // Mapped, the memory is what it is: reachable from the driver.
  static void keep_drivers_loaded() {
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void*) {
          if (info->dlpi_name && std::strstr(info->dlpi_name, "libvulkan_"))
            dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
          return 0;
        },
        nullptr);
  }
#endif
  vk::raii::Instance instance_{nullptr};
  vk::raii::DebugUtilsMessengerEXT messenger_{nullptr};
  vk::raii::PhysicalDevice physical_{nullptr};
  vk::raii::Device device_{nullptr};
  vk::raii::Queue queue_{nullptr};
  vk::raii::Queue second_queue_{nullptr};  // null where the family has one queue
  bool has_second_queue_ = false;
  uint32_t second_family_ = 0;
  uint32_t queue_family_ = 0;
  bool has_memory_budget_ = false;
  std::vector<std::string> extensions_;  // the physical device's, enumerated once
  bool has_extension(std::string_view name) const {
    return std::find(extensions_.begin(), extensions_.end(), name) != extensions_.end();
  }
  std::optional<uint64_t> memory_limit_;  // limit_memory()
  mutable std::atomic<bool> device_lost_{false};
  DeviceInfo info_{};
  // kernel_cache()'s, by folder; declared after device_, so destroyed before it.
  mutable std::mutex kernel_caches_mutex_;
  mutable std::map<std::filesystem::path, std::shared_ptr<KernelCache>> kernel_caches_;
};

}  // namespace unicorn::gpu

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::gpu {

UNICORN_DECL void Context::create_instance() {
  const auto app = vk::ApplicationInfo{}
                       .setPApplicationName("unicorn")
                       .setApplicationVersion(1)
                       .setPEngineName("unicorn")
                       .setEngineVersion(1)
                       .setApiVersion(VK_API_VERSION_1_2);
  std::vector<const char*> layers, extensions;
  if (validation_) {
    bool have_layer = false;
    for (const auto& l : context_.enumerateInstanceLayerProperties())
      if (std::string_view(l.layerName) == "VK_LAYER_KHRONOS_validation") have_layer = true;
    if (!have_layer)
      throw Error("gpu: validation is asked for (UNICORN_VALIDATION in the tools) but "
                  "VK_LAYER_KHRONOS_validation is not installed (Debian: apt-get install vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  try {
    instance_ = vk::raii::Instance(
        context_, vk::InstanceCreateInfo{}
                      .setPApplicationInfo(&app)
                      .setEnabledLayerCount(uint32_t(layers.size()))
                      .setPpEnabledLayerNames(layers.data())
                      .setEnabledExtensionCount(uint32_t(extensions.size()))
                      .setPpEnabledExtensionNames(extensions.data()));
  } catch (const vk::SystemError& e) {
    throw Error(std::string("gpu: cannot create a Vulkan instance (is a Vulkan driver "
                            "installed? Debian: mesa-vulkan-drivers): ") + e.what());
  }
#if defined(UNICORN_KEEP_VULKAN_DRIVERS_LOADED)
  keep_drivers_loaded();
#endif
  if (validation_) {
    using S = vk::DebugUtilsMessageSeverityFlagBitsEXT;
    using T = vk::DebugUtilsMessageTypeFlagBitsEXT;
    messenger_ = vk::raii::DebugUtilsMessengerEXT(
        instance_, vk::DebugUtilsMessengerCreateInfoEXT{}
                       .setMessageSeverity(S::eError | S::eWarning)
                       .setMessageType(T::eGeneral | T::eValidation | T::ePerformance)
                       .setPfnUserCallback(&Context::on_message)
                       .setPUserData(this));
  }
}

UNICORN_DECL void Context::pick_physical_device() {
  vk::raii::PhysicalDevices devices(instance_);
  if (devices.empty()) throw Error("gpu: no Vulkan device found");
  size_t pick = 0;
  if (device_index_) {
    pick = *device_index_;
    if (pick >= devices.size())
      throw Error("gpu: device " + std::to_string(pick) + " is asked for (UNICORN_DEVICE in the tools) but only " +
                  std::to_string(devices.size()) + " Vulkan devices exist");
  } else {
    for (size_t i = 1; i < devices.size(); ++i)
      if (type_rank(devices[i].getProperties().deviceType) <
          type_rank(devices[pick].getProperties().deviceType))
        pick = i;
  }
  physical_ = std::move(devices[pick]);
  for (const auto& e : physical_.enumerateDeviceExtensionProperties())
    extensions_.emplace_back(e.extensionName.data());
  has_memory_budget_ = has_extension(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

  const auto chain = physical_.getProperties2<vk::PhysicalDeviceProperties2,
                                              vk::PhysicalDeviceMaintenance3Properties,
                                              vk::PhysicalDeviceSubgroupProperties>();
  const auto& p = chain.get<vk::PhysicalDeviceProperties2>().properties;
  info_.name = p.deviceName.data();
  info_.type = p.deviceType;
  info_.vendor_id = p.vendorID;
  info_.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  info_.max_memory_allocation_size =
      chain.get<vk::PhysicalDeviceMaintenance3Properties>().maxMemoryAllocationSize;
  info_.min_storage_buffer_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  const auto& subgroup = chain.get<vk::PhysicalDeviceSubgroupProperties>();
  info_.subgroup_size = subgroup.subgroupSize;
  // Reductions use subgroupAdd; every desktop and mobile driver of Vulkan 1.1+
  // offers it in compute shaders, and the matvec kernel needs 128 / size rows.
  const auto need = vk::SubgroupFeatureFlagBits::eBasic | vk::SubgroupFeatureFlagBits::eArithmetic;
  if (!(subgroup.supportedStages & vk::ShaderStageFlagBits::eCompute) ||
      (subgroup.supportedOperations & need) != need || subgroup.subgroupSize > 128 ||
      128 % subgroup.subgroupSize != 0)
    throw Error("gpu: " + info_.name + " lacks subgroup arithmetic in compute shaders "
                "(or has a subgroup size that does not divide 128)");
  info_.max_shared_memory = p.limits.maxComputeSharedMemorySize;
  for (int i = 0; i < 3; ++i) info_.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  info_.timestamp_period_ns = p.limits.timestampPeriod;
  const auto mem = physical_.getMemoryProperties();
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & vk::MemoryHeapFlagBits::eDeviceLocal)
      info_.device_local_heap_bytes = std::max<uint64_t>(info_.device_local_heap_bytes,
                                                         mem.memoryHeaps[i].size);
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    const auto f = mem.memoryTypes[i].propertyFlags;
    if ((f & vk::MemoryPropertyFlagBits::eDeviceLocal) &&
        (f & vk::MemoryPropertyFlagBits::eHostVisible))
      info_.unified_memory = info_.type != vk::PhysicalDeviceType::eDiscreteGpu;
  }
}

UNICORN_DECL void Context::create_device() {
  const auto families = physical_.getQueueFamilyProperties();
  std::optional<uint32_t> family;
  for (uint32_t i = 0; i < families.size(); ++i)
    if (families[i].queueFlags & vk::QueueFlagBits::eCompute) {
      // A compute-only family would do; a combined one is what every driver has.
      family = i;
      break;
    }
  if (!family) throw Error("gpu: " + info_.name + " has no compute queue");
  queue_family_ = *family;
  detect_coopmat();
  detect_int_dot();
  detect_multiprocessors();

  const auto features = physical_.getFeatures2<vk::PhysicalDeviceFeatures2,
                                               vk::PhysicalDeviceVulkan11Features,
                                               vk::PhysicalDeviceVulkan12Features>();
  const auto& f11 = features.get<vk::PhysicalDeviceVulkan11Features>();
  if (!f11.storageBuffer16BitAccess)
    throw Error("gpu: " + info_.name + " lacks storageBuffer16BitAccess, which the engine "
                "needs for F16 and block-quantized weights");
  if (!features.get<vk::PhysicalDeviceVulkan12Features>().timelineSemaphore)
    throw Error("gpu: " + info_.name + " lacks timelineSemaphore (Vulkan 1.2), which orders the engine's "
                "two queues");

  // The second queue: of a compute-only family where there is one (a
  // driver's asynchronous compute, which runs beside the first family's
  // work), else the first family's second queue, else none.
  std::optional<uint32_t> compute_only;
  for (uint32_t i = 0; i < families.size(); ++i)
    if (i != queue_family_ && (families[i].queueFlags & vk::QueueFlagBits::eCompute) &&
        !(families[i].queueFlags & vk::QueueFlagBits::eGraphics) && !compute_only)
      compute_only = i;
  const float priorities[] = {1.0f, 1.0f};
  std::vector<vk::DeviceQueueCreateInfo> queue_infos;
  uint32_t second_index = 0;
  if (compute_only) {
    second_family_ = *compute_only;
    queue_infos.push_back(vk::DeviceQueueCreateInfo{}.setQueueFamilyIndex(queue_family_).setQueueCount(1).setPQueuePriorities(priorities));
    queue_infos.push_back(vk::DeviceQueueCreateInfo{}.setQueueFamilyIndex(second_family_).setQueueCount(1).setPQueuePriorities(priorities));
  } else {
    second_family_ = queue_family_;
    second_index = 1;
    queue_infos.push_back(vk::DeviceQueueCreateInfo{}
                              .setQueueFamilyIndex(queue_family_)
                              .setQueueCount(std::min(families[queue_family_].queueCount, 2u))
                              .setPQueuePriorities(priorities));
  }
  const bool second = compute_only || families[queue_family_].queueCount > 1;
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR enable_coop{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
      .pNext = nullptr,
      .cooperativeMatrix = VK_TRUE,
      .cooperativeMatrixRobustBufferAccess = VK_FALSE};
  // matmul_coop keeps fp16 in shared memory (shaderFloat16), and glslang emits
  // the Vulkan memory model for GL_KHR_memory_scope_semantics, which
  // cooperative-matrix GLSL requires.
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR enable_int_dot{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR,
      .pNext = info_.coopmat ? &enable_coop : nullptr,
      .shaderIntegerDotProduct = VK_TRUE};
  void* chain12 = info_.int_dot ? static_cast<void*>(&enable_int_dot) : enable_int_dot.pNext;
  auto enable12 = vk::PhysicalDeviceVulkan12Features{}
                      .setPNext(chain12)
                      .setShaderFloat16(info_.coopmat ? VK_TRUE : VK_FALSE)
                      .setVulkanMemoryModel(info_.coopmat ? VK_TRUE : VK_FALSE)
                      .setTimelineSemaphore(VK_TRUE);  // gpu::Stream orders one queue's work after another's
  auto enable11 = vk::PhysicalDeviceVulkan11Features{}.setPNext(&enable12).setStorageBuffer16BitAccess(VK_TRUE);
  auto enable = vk::PhysicalDeviceFeatures2{}.setPNext(&enable11);
  // VK_EXT_memory_budget: the per-heap budget the placement check reads;
  // VK_KHR_cooperative_matrix: prefill on tensor units (detect_coopmat).
  std::vector<const char*> extensions;
  if (has_memory_budget_) extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  if (info_.coopmat) extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (info_.int_dot) extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  device_ = vk::raii::Device(physical_, vk::DeviceCreateInfo{}
                                            .setPNext(&enable)
                                            .setQueueCreateInfos(queue_infos)
                                            .setEnabledExtensionCount(uint32_t(extensions.size()))
                                            .setPpEnabledExtensionNames(extensions.data()));
  queue_ = vk::raii::Queue(device_, queue_family_, 0);
  if (second) {
    second_queue_ = vk::raii::Queue(device_, second_family_, second_index);
    has_second_queue_ = true;
  }
}

UNICORN_DECL void Context::detect_int_dot() {
  if (!has_extension(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) return;
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR features{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &features};
  physical_.getDispatcher()->vkGetPhysicalDeviceFeatures2(*physical_, &f2);
  if (!features.shaderIntegerDotProduct) return;
  VkPhysicalDeviceShaderIntegerDotProductPropertiesKHR properties{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES_KHR};
  VkPhysicalDeviceProperties2 p2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &properties};
  physical_.getDispatcher()->vkGetPhysicalDeviceProperties2(*physical_, &p2);
  info_.int_dot = true;
  info_.int_dot_accelerated = properties.integerDotProduct4x8BitPackedSignedAccelerated;
}

UNICORN_DECL void Context::detect_multiprocessors() {
  const auto query = [&](auto& properties) {
    VkPhysicalDeviceProperties2 p2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &properties};
    physical_.getDispatcher()->vkGetPhysicalDeviceProperties2(*physical_, &p2);
  };
  uint32_t count = 0;
  if (info_.cpu()) {
    count = std::thread::hardware_concurrency();
    info_.multiprocessors_source = "the host's threads";
  } else if (has_extension(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    query(sm);
    count = sm.shaderSMCount;
    info_.multiprocessors_source = VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME;
  } else if (has_extension(VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderCorePropertiesAMD core{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    query(core);
    count = core.shaderEngineCount * core.shaderArraysPerEngineCount * core.computeUnitsPerShaderArray;
    info_.multiprocessors_source = VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME;
  } else if (has_extension(VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM core{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
    query(core);
    count = core.shaderCoreCount;
    info_.multiprocessors_source = VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME;
  }
  if (count == 0) {
    count = kAssumedMultiprocessors;
    info_.multiprocessors_source = "not said by the driver: assumed";
  }
  info_.multiprocessors = count;
}

UNICORN_DECL void Context::detect_coopmat() {
  info_.coopmat = false;
  auto no = [&](std::string why) { info_.coopmat_note = std::move(why); };
  if (!allow_coopmat_) return no("fp16 tensor-core prefill turned off (DeviceOptions::coopmat)");
  if (!has_extension(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) return no("no VK_KHR_cooperative_matrix");
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceVulkan12Features f12{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                       .pNext = &coop};
  VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
  physical_.getDispatcher()->vkGetPhysicalDeviceFeatures2(*physical_, &f2);
  if (!coop.cooperativeMatrix) return no("cooperativeMatrix feature off");
  if (!f12.shaderFloat16 || !f12.vulkanMemoryModel) return no("no shaderFloat16 or vulkanMemoryModel");
  // matmul_coop's tiles are grids of 4 or 8 subgroups of these sizes.
  if (info_.subgroup_size != 32 && info_.subgroup_size != 64)
    return no("subgroup size " + std::to_string(info_.subgroup_size) + " (needs 32 or 64)");
  if (info_.max_shared_memory < kCoopSharedBytes)
    return no("shared memory " + std::to_string(info_.max_shared_memory) + " bytes");
  const auto list_properties = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      instance_.getProcAddr("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  if (!list_properties) return no("no vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  uint32_t count = 0;
  list_properties(*physical_, &count, nullptr);
  std::vector<VkCooperativeMatrixPropertiesKHR> props(
      count, {.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  list_properties(*physical_, &count, props.data());
  // A shape the kernel tiles: a subgroup block (32 or 64 tokens x 32 rows)
  // of at most 4 x 4 matrices, K steps of 32, one accumulator within 16 x 16 floats.
  uint32_t best = 0;
  for (const auto& p : props) {
    if (p.AType != VK_COMPONENT_TYPE_FLOAT16_KHR || p.BType != VK_COMPONENT_TYPE_FLOAT16_KHR ||
        p.CType != VK_COMPONENT_TYPE_FLOAT32_KHR || p.ResultType != VK_COMPONENT_TYPE_FLOAT32_KHR ||
        p.scope != VK_SCOPE_SUBGROUP_KHR || p.saturatingAccumulation)
      continue;
    if (32 % p.MSize || 32 % p.NSize || 32 % p.KSize || p.MSize < 16 || p.NSize < 8 ||
        p.MSize * p.NSize > 256)
      continue;
    const uint32_t volume = p.MSize * p.NSize * p.KSize;  // bigger: fewer, larger products
    if (volume > best) {
      best = volume;
      info_.coop_m = p.MSize, info_.coop_n = p.NSize, info_.coop_k = p.KSize;
    }
  }
  if (!best) return no("no fp16 x fp16 -> fp32 subgroup shape the kernel tiles");
  info_.coopmat = true;
}

UNICORN_DECL std::vector<Context::Heap> Context::heaps() const {
  std::vector<Heap> out;
  if (has_memory_budget_) {
    const auto chain = physical_.getMemoryProperties2<vk::PhysicalDeviceMemoryProperties2,
                                                      vk::PhysicalDeviceMemoryBudgetPropertiesEXT>();
    const auto& props = chain.get<vk::PhysicalDeviceMemoryProperties2>().memoryProperties;
    const auto& budget = chain.get<vk::PhysicalDeviceMemoryBudgetPropertiesEXT>();
    for (uint32_t i = 0; i < props.memoryHeapCount; ++i) {
      const uint64_t b = budget.heapBudget[i], used = budget.heapUsage[i];
      out.push_back({props.memoryHeaps[i].size, b > used ? b - used : 0,
                     bool(props.memoryHeaps[i].flags & vk::MemoryHeapFlagBits::eDeviceLocal)});
    }
  } else {
    const auto props = physical_.getMemoryProperties();
    for (uint32_t i = 0; i < props.memoryHeapCount; ++i)
      out.push_back({props.memoryHeaps[i].size, props.memoryHeaps[i].size,
                     bool(props.memoryHeaps[i].flags & vk::MemoryHeapFlagBits::eDeviceLocal)});
  }
  if (memory_limit_)
    for (Heap& h : out) h.available = std::min(h.available, *memory_limit_);
  return out;
}

}  // namespace unicorn::gpu

#endif  // UNICORN_DEFINE_HERE

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::gpu {

UNICORN_DECL std::string prefill_linear_path(const DeviceInfo& info) {
  if (info.coopmat)
    return "matmul_coop: fp16 cooperative matrices " + std::to_string(info.coop_m) + "x" +
           std::to_string(info.coop_n) + "x" + std::to_string(info.coop_k) +
           ", fp32 accumulation (VK_KHR_cooperative_matrix)";
  if (info.cpu()) return "matvec: a CPU device's prefill products take the decode kernel, a row group per workgroup";
  return "matmul: fp32 tiles (" + info.coopmat_note + ")";
}

}  // namespace unicorn::gpu

#endif  // UNICORN_DEFINE_HERE
