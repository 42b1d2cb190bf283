// unicorn/engine/upload.hpp — weights into device memory, for the loader
// (engine/loader.hpp): GGUF rows copied as they are or, for block formats and
// float sources of another type, converted on the GPU into the planar device
// layout, through a ring of staging buffers.
#pragma once

#include "unicorn/engine/core.hpp"

namespace unicorn::detail {

UNICORN_DECL void EngineCore::upload(const TensorSlot& t, size_t part, std::span<const std::byte> bytes) {
  const TensorPart& p = layout_.parts_of(t)[part];
  if (bytes.size() != p.bytes)
    throw Error("load: " + t.gguf_name() + " part " + std::to_string(part) + " has " +
                std::to_string(bytes.size()) + " bytes, expected " + std::to_string(p.bytes));
  if (is_block_quantized(t.format)) return convert_part(t, p, bytes, SourceType::GgmlBlocks, 0);
  const gpu::Buffer& dst = slab_of(t, p);
  if (dst.mapped) {  // Gtt: host-coherent memory the host writes directly, no staging
    gpu::parallel_copy(dst.mapped + p.offset, bytes.data(), bytes.size());
    return;
  }
  gpu::StagingRing& ring = uploads();
  for (uint64_t done = 0; done < bytes.size(); done += ring.slot_bytes()) {
    const uint64_t n = std::min<uint64_t>(ring.slot_bytes(), bytes.size() - done);
    ring.submit(bytes.subspan(done, n), [&](vk::CommandBuffer cb, uint32_t slot) {
      cb.copyBuffer(ring.buffer(slot).handle, dst.handle, vk::BufferCopy{0, p.offset + done, n});
    });
  }
}

UNICORN_DECL void EngineCore::finish_uploads() {
  if (!uploads_) return;
  uploads_->wait_all();
  upload_timing_ = uploads_->timing();
  uploads_.reset();
}

UNICORN_DECL void EngineCore::convert(const TensorSlot& t, size_t part, std::span<const std::byte> source, SourceType type, float add) {
  const TensorPart& p = layout_.parts_of(t)[part];
  const uint64_t elems = p.rows * t.cols;
  const uint64_t want = elems * (type == SourceType::F32 ? 4 : 2);
  if (source.size() != want)
    throw Error("load: " + t.gguf_name() + ": source has " + std::to_string(source.size()) +
                " bytes, expected " + std::to_string(want));
  convert_part(t, p, source, type, add);
}

UNICORN_DECL gpu::StagingRing& EngineCore::uploads() {
  if (!uploads_) {
    uploads_.emplace(ctx_, kStagingBytes);
    upload_timing_ = {};  // a new load's ring: its report starts from zero
  }
  return *uploads_;
}

UNICORN_DECL void EngineCore::convert_part(const TensorSlot& t, const TensorPart& p, std::span<const std::byte> source, SourceType type, float add) {
  const FormatInfo f = format_info(t.format);
  if (is_block_quantized(t.format) && !quantized_on_device(t.format) && type != SourceType::GgmlBlocks)
    throw Error("load: " + t.gguf_name() + ": the engine reads " + std::string(f.name) +
                " only from a GGUF file's own blocks; it does not quantize F32/F16/BF16 weights to " +
                std::string(f.name) + " (quantize the file with llama-quantize, or pick a scheme with Q8_0, "
                "Q4_0, Q4_1, Q5_0 or Q5_1 there)");
  const uint64_t elems = p.rows * t.cols;
  // Source bytes per destination unit (an element, or a block of block_elems).
  const uint64_t unit_bytes = type == SourceType::GgmlBlocks ? f.block_bytes
                              : type == SourceType::F32      ? 4 * f.block_elems
                                                             : 2 * f.block_elems;
  const uint64_t units = elems / f.block_elems;
  const kernels::Convert spec{.source_type = uint32_t(type), .add = add};
  const auto& k = kernel(kernels::convert(t.format), spec);
  gpu::StagingRing& ring = uploads();
  const uint64_t per_fill = ring.slot_bytes() / unit_bytes;
  const gpu::Buffer& dst = slab_of(t, p);
  std::array<vk::DescriptorSet, gpu::StagingRing::kSlots> sets{};  // made on first use of a slot
  for (uint64_t done = 0; done < units; done += per_fill) {
    const uint64_t n = std::min<uint64_t>(per_fill, units - done);
    const uint32_t groups = uint32_t((n + 63) / 64);
    const uint32_t gx = std::min<uint32_t>(groups, 65535), gy = (groups + gx - 1) / gx;
    ring.submit(source.subspan(done * unit_bytes, n * unit_bytes), [&](vk::CommandBuffer cb, uint32_t slot) {
      if (!sets[slot]) {
        const vk::DescriptorBufferInfo bufs[] = {ring.buffer(slot).whole(), dst.range(p.offset, p.bytes)};
        sets[slot] = sets_.make(k, bufs);
      }
      gpu::record(cb, {&k, sets[slot], {uint32_t(n), uint32_t(done), uint32_t(units)}, {gx, gy, 1}},
                  false);
    });
  }
}

}  // namespace unicorn::detail
