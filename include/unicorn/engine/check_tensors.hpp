// unicorn/engine/check_tensors.hpp — --check-tensors: after loading, every
// weight tensor is scanned for NaN and Inf on the GPU, as the device holds it,
// in one submission (shaders/check_finite.comp: one dispatch per tensor part,
// no barrier between them). A bad value is an error naming the tensor, the
// first bad element (its row and column) and whether it is NaN or Inf, so a
// corrupt or badly converted file is refused before it writes nonsense.
//
// Block formats (Q8_0, Q4_0) hold integer quants and an f16 scale per block:
// the scales are what is checked, and a bad one spoils its whole block, so the
// element named is the block's first. The LM head a scheme keeps as its own
// copy is made from the embedding, which is checked in its place.
#pragma once

#include <chrono>
#include <cstring>
#include <string>
#include <unicorn/spirv.hpp>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/engine/core.hpp"
#include "unicorn/engine/kernels.hpp"
#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"

namespace unicorn {

struct TensorCheck {
  size_t tensors = 0;   // tensors scanned
  uint64_t bytes = 0;   // their bytes on the device
  double seconds = 0;   // recording, the one submission and the read-back
};

// Throws unicorn::Error naming the first tensor (in layout order) that holds a
// NaN or an Inf; otherwise says what was scanned and how long it took.
TensorCheck check_tensors(detail::EngineCore& core);

}  // namespace unicorn

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn {

UNICORN_DECL TensorCheck check_tensors(detail::EngineCore& core) {
  const auto start = std::chrono::steady_clock::now();
  gpu::Context& ctx = core.context();
  const LayoutView& L = core.layout();
  // Its own pipelines (four small ones) off the disk cache: this runs once.
  gpu::KernelCache kernels(ctx, std::filesystem::path{});
  gpu::DescriptorArena sets(ctx);
  gpu::Stream stream(ctx);

  struct Slot {
    const TensorSlot* tensor;
    const TensorPart* part;
    kernels::FiniteCheck kind;
  };
  std::vector<Slot> slots;
  TensorCheck report;
  for (const TensorSlot& t : L.tensors) {
    if (t.arena != Arena::Weights || t.role == Role::LmHead) continue;
    const auto kind = t.format == Format::F32    ? kernels::FiniteCheck::F32
                      : t.format == Format::F16  ? kernels::FiniteCheck::F16
                      : t.format == Format::BF16 ? kernels::FiniteCheck::BF16
                                                 : kernels::FiniteCheck::BlockScales;
    for (const TensorPart& p : L.parts_of(t)) slots.push_back({&t, &p, kind});
    report.tensors++;
    report.bytes += t.bytes;
  }
  const uint64_t result_bytes[] = {4ull * std::max<size_t>(slots.size(), 1)};
  gpu::BufferSet results(ctx, result_bytes, gpu::MemoryKind::HostVisible, "check-tensors results");
  std::memset(results[0].mapped, 0xff, result_bytes[0]);  // "nothing found" in every slot

  std::vector<gpu::Dispatch> dispatches;
  for (uint32_t i = 0; i < slots.size(); ++i) {
    const Slot& s = slots[i];
    const TensorSlot& t = *s.tensor;
    const TensorPart& p = *s.part;
    const FormatInfo& f = format_info(t.format);
    const uint64_t blocks = p.rows * t.cols / f.block_elems;
    // Values: elements, or the f16 scales at the end of a block part, after
    // every other byte (weights.glsl): d per block, or Q4_K's (d, dmin).
    const uint64_t per_block = s.kind == kernels::FiniteCheck::BlockScales ? trailing_halves(t.format) : 1;
    const uint32_t count = uint32_t(blocks * per_block);
    const uint32_t first_half = s.kind == kernels::FiniteCheck::BlockScales
                                    ? uint32_t(blocks * (f.block_bytes - 2 * per_block) / 2)
                                    : 0u;
    const auto& k = kernels.get(std::string(spirv::name(kernels::kCheckFinite.module)), spirv::words(kernels::kCheckFinite.module),
                                kernels::kCheckFinite.bindings,
                                kernels::CheckFinite{.kind = uint32_t(s.kind)});
    const vk::DescriptorBufferInfo b[] = {core.weight_slab(p.slab).range(p.offset, p.bytes), results[0].whole()};
    const uint32_t groups = uint32_t(std::clamp<uint64_t>((count + 63) / 64, 1, 65535));
    dispatches.push_back({&k, sets.make(k, b), {count, first_half, i}, {groups, 1, 1}, false});
  }
  stream.run_once([&](vk::CommandBuffer cb) {
    for (const gpu::Dispatch& d : dispatches) gpu::record(cb, d, false);
  });

  const auto* found = reinterpret_cast<const uint32_t*>(results[0].mapped);
  for (uint32_t i = 0; i < slots.size(); ++i) {
    if (found[i] == 0xffffffffu) continue;
    const Slot& s = slots[i];
    const FormatInfo& f = format_info(s.tensor->format);
    const bool nan = found[i] & 1u;
    // The part's value index -> the tensor's element index.
    const uint64_t per_block = f.block_elems > 1 ? trailing_halves(s.tensor->format) : 1;
    const uint64_t element =
        s.part->row_begin * s.tensor->cols + uint64_t(found[i] >> 1) / per_block * f.block_elems;
    const uint64_t row = element / s.tensor->cols, col = element % s.tensor->cols;
    throw Error("check-tensors: tensor '" + s.tensor->gguf_name() + "' (" + std::string(f.name) + ") holds " +
                (nan ? "NaN" : "Inf") + " at element " + std::to_string(element) + " (row " + std::to_string(row) +
                ", column " + std::to_string(col) + ")" +
                (f.block_elems > 1 ? ": the scale of the block that starts there" : "") +
                "; the file is damaged or was converted wrongly");
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace unicorn

#endif  // UNICORN_DEFINE_HERE
