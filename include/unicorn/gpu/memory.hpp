// unicorn/gpu/memory.hpp — buffers carved from few large allocations.
//
// Each slab of the layout becomes one VkBuffer (at most kMaxBindingBytes, so it
// binds whole on any device). Slabs are packed into VkDeviceMemory allocations
// under the device's maxMemoryAllocationSize, so a 16 GB model takes a handful
// of allocations rather than one per tensor.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "unicorn/gpu/context.hpp"

namespace unicorn::gpu {

enum class MemoryKind {
  DeviceLocal,  // weights, KV cache, activations
  HostVisible,  // staging, per-step values, read-back (host-coherent, mapped)
};

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
    const auto usage = vk::BufferUsageFlagBits::eStorageBuffer |
                       vk::BufferUsageFlagBits::eTransferSrc |
                       vk::BufferUsageFlagBits::eTransferDst;
    const auto required = kind == MemoryKind::DeviceLocal
                              ? vk::MemoryPropertyFlags{vk::MemoryPropertyFlagBits::eDeviceLocal}
                              : vk::MemoryPropertyFlagBits::eHostVisible |
                                    vk::MemoryPropertyFlagBits::eHostCoherent;
    const uint64_t max_alloc = ctx.info().max_memory_allocation_size;
    for (uint64_t size : sizes)
      buffers_.emplace_back(dev, vk::BufferCreateInfo{.size = size ? size : 16, .usage = usage});

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
      const uint32_t type = ctx.memory_type(type_bits, required);
      try {
        memory_.emplace_back(dev, vk::MemoryAllocateInfo{.allocationSize = total,
                                                         .memoryTypeIndex = type});
      } catch (const vk::SystemError& e) {
        throw Error("gpu: out of memory on " + ctx.info().name + ": cannot allocate " +
                    std::to_string(total >> 20) + " MiB for " + what + " (" + e.what() + ")");
      }
      std::byte* base = nullptr;
      if (kind == MemoryKind::HostVisible)
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

 private:
  std::vector<vk::raii::Buffer> buffers_;
  std::vector<vk::raii::DeviceMemory> memory_;
  std::vector<Buffer> views_;
};

}  // namespace unicorn::gpu
