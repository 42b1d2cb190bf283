// unicorn/gpu/memory.hpp — buffers carved from few large allocations.
//
// Each slab of the layout becomes one VkBuffer (at most kMaxBindingBytes, so it
// binds whole on any device). Slabs are packed into VkDeviceMemory allocations
// under the device's maxMemoryAllocationSize, so a 16 GB model takes a handful
// of allocations rather than one per tensor.
//
// Placement pools map to memory kinds: Vram -> DeviceLocal; Gtt -> Gtt, memory
// the host maps and the GPU reads (host-visible and host-coherent, preferably
// not device-local: on an APU the system-RAM mapping, on a discrete GPU system
// RAM read over PCIe). check_pools_fit compares a layout's pool totals with the
// device's heaps before anything is allocated.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/config/placement.hpp"
#include "unicorn/gpu/context.hpp"

namespace unicorn::gpu {

enum class MemoryKind {
  DeviceLocal,  // weights, KV cache, activations (Pool::Vram)
  HostVisible,  // staging, per-step values, read-back (host-coherent, mapped)
  Gtt,          // tensors placed in Pool::Gtt (host-visible, not device-local; mapped)
};

MemoryKind memory_kind_of(Pool pool);

inline constexpr vk::BufferUsageFlags kStorageUsage = vk::BufferUsageFlagBits::eStorageBuffer |
                                                  vk::BufferUsageFlagBits::eTransferSrc |
                                                  vk::BufferUsageFlagBits::eTransferDst;

// The memory type a BufferSet of `kind` allocates from, for buffers whose
// requirements allow `type_bits`.
uint32_t memory_type_of(const Context& ctx, MemoryKind kind, uint32_t type_bits);

// The memory type storage buffers of `kind` get on this device.
uint32_t storage_memory_type(const Context& ctx, MemoryKind kind);

std::string gib(uint64_t b);

// One pool's total and the heap its memory type draws from.
struct PoolNeed {
  Pool pool;
  uint64_t bytes;
  uint32_t heap;
};

// Throws unicorn::Error naming the pool(s), the bytes needed, the bytes
// available and the shortfall when the heaps cannot hold the pools (pools on
// one heap — Vram and Gtt on lavapipe — are summed). Pure: tests call it with
// made-up heaps.
void check_pools_fit(const std::string& device, std::span<const PoolNeed> needs,
                     std::span<const Context::Heap> heaps);

struct Buffer {
  vk::Buffer handle;   // owned by the BufferSet
  uint64_t size = 0;
  std::byte* mapped = nullptr;  // non-null for HostVisible memory

  vk::DescriptorBufferInfo whole() const { return {handle, 0, size}; }
  vk::DescriptorBufferInfo range(uint64_t offset, uint64_t bytes) const {
    return {handle, offset, bytes};
  }
};

class BufferSet {
 public:
  BufferSet() = default;

  // Creates one buffer per entry of `sizes`; `what` names the set in errors.
  BufferSet(const Context& ctx, std::span<const uint64_t> sizes, MemoryKind kind,
            const std::string& what) {
    const auto& dev = ctx.device();
    const auto usage = kStorageUsage;
    const uint64_t max_alloc = ctx.info().max_memory_allocation_size;
    // Both queues' families use every buffer where they differ (gpu::Context::sharing_families).
    const auto families = ctx.sharing_families();
    const auto sharing = families.empty() ? vk::SharingMode::eExclusive : vk::SharingMode::eConcurrent;
    for (uint64_t size : sizes)
      buffers_.emplace_back(dev, vk::BufferCreateInfo{}
                                     .setSize(size ? size : 16)
                                     .setUsage(usage)
                                     .setSharingMode(sharing)
                                     .setQueueFamilyIndices(families));

    // Greedy packing in order; each buffer's alignment and type bits respected.
    size_t i = 0;
    while (i < buffers_.size()) {
      const auto first_req = buffers_[i].getMemoryRequirements();
      uint32_t type_bits = first_req.memoryTypeBits;
      uint64_t total = 0;
      std::vector<uint64_t> offsets;
      size_t j = i;
      for (; j < buffers_.size(); ++j) {
        const auto req = buffers_[j].getMemoryRequirements();
        const uint64_t at = (total + req.alignment - 1) / req.alignment * req.alignment;
        if (j > i && (at + req.size > max_alloc || !(type_bits & req.memoryTypeBits))) break;
        type_bits &= req.memoryTypeBits;
        offsets.push_back(at);
        total = at + req.size;
      }
      const uint32_t type = memory_type_of(ctx, kind, type_bits);
      try {
        memory_.emplace_back(dev, vk::MemoryAllocateInfo{}.setAllocationSize(total).setMemoryTypeIndex(type));
        bytes_ += total;
      } catch (const vk::SystemError& e) {
        throw Error("gpu: out of memory on " + ctx.info().name + ": cannot allocate " +
                    std::to_string(total >> 20) + " MiB for " + what + " (" + e.what() + ")");
      }
      std::byte* base = nullptr;
      if (kind != MemoryKind::DeviceLocal)
        base = static_cast<std::byte*>(memory_.back().mapMemory(0, total));
      for (size_t k = i; k < j; ++k) {
        buffers_[k].bindMemory(*memory_.back(), offsets[k - i]);
        views_.push_back({*buffers_[k], sizes[k], base ? base + offsets[k - i] : nullptr});
      }
      i = j;
    }
  }

  const Buffer& operator[](size_t i) const { return views_[i]; }
  size_t size() const { return views_.size(); }
  size_t allocations() const { return memory_.size(); }
  // Bytes of device memory its allocations hold (alignment included).
  uint64_t bytes() const { return bytes_; }

 private:
  std::vector<vk::raii::Buffer> buffers_;
  std::vector<vk::raii::DeviceMemory> memory_;
  std::vector<Buffer> views_;
  uint64_t bytes_ = 0;
};

}  // namespace unicorn::gpu

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::gpu {

UNICORN_DECL MemoryKind memory_kind_of(Pool pool) {
  switch (pool) {
    case Pool::Vram: return MemoryKind::DeviceLocal;
    case Pool::Gtt: return MemoryKind::Gtt;
    default:
      throw Error("gpu: no Vulkan memory holds Pool::" + std::string(pool_name(pool)) +
                  " (the compile-time placement checks refuse it)");
  }
}

UNICORN_DECL uint32_t memory_type_of(const Context& ctx, MemoryKind kind, uint32_t type_bits) {
  using F = vk::MemoryPropertyFlagBits;
  switch (kind) {
    case MemoryKind::DeviceLocal: return ctx.memory_type(type_bits, F::eDeviceLocal);
    case MemoryKind::HostVisible: return ctx.memory_type(type_bits, F::eHostVisible | F::eHostCoherent);
    case MemoryKind::Gtt: return ctx.memory_type(type_bits, F::eHostVisible | F::eHostCoherent, {}, F::eDeviceLocal);
  }
  return 0;
}

UNICORN_DECL uint32_t storage_memory_type(const Context& ctx, MemoryKind kind) {
  const auto families = ctx.sharing_families();
  const vk::raii::Buffer probe(ctx.device(), vk::BufferCreateInfo{}
                                                 .setSize(16)
                                                 .setUsage(kStorageUsage)
                                                 .setSharingMode(families.empty() ? vk::SharingMode::eExclusive
                                                                                  : vk::SharingMode::eConcurrent)
                                                 .setQueueFamilyIndices(families));
  return memory_type_of(ctx, kind, probe.getMemoryRequirements().memoryTypeBits);
}

UNICORN_DECL std::string gib(uint64_t b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  return buf;
}

UNICORN_DECL void check_pools_fit(const std::string& device, std::span<const PoolNeed> needs,
                                  std::span<const Context::Heap> heaps) {
  for (uint32_t h = 0; h < heaps.size(); ++h) {
    uint64_t need = 0;
    std::string pools, each;  // "Vram + Gtt"; "Vram 123 bytes, Gtt 456 bytes"
    for (const PoolNeed& n : needs)
      if (n.heap == h && n.bytes) {
        need += n.bytes;
        pools += (pools.empty() ? "" : " + ") + std::string(pool_name(n.pool));
        each += (each.empty() ? "" : ", ") + std::string(pool_name(n.pool)) + " " + std::to_string(n.bytes) + " bytes";
      }
    if (need <= heaps[h].available) continue;
    const bool shared = pools.find('+') != std::string::npos;
    throw Error("gpu: the placement does not fit " + device + ": pool " + pools + " needs " +
                gib(need) + " (" + (shared ? each + ": " : "") + std::to_string(need) + " bytes) but its memory heap " +
                std::to_string(h) + (heaps[h].device_local ? " (device-local)" : " (system memory)") +
                " has " + gib(heaps[h].available) + " (" + std::to_string(heaps[h].available) +
                " bytes) available of " + gib(heaps[h].size) + "; short by " +
                gib(need - heaps[h].available) + ". Move tensor groups to another pool "
                "(placement::Ffn<Pool::Gtt>), lower max_context, or use a smaller scheme");
  }
}

}  // namespace unicorn::gpu

#endif  // UNICORN_DEFINE_HERE
