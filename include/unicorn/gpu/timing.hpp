// unicorn/gpu/timing.hpp — device time from Vulkan timestamp queries, the
// device's measured read bandwidth (the decode roofline) and host-to-device
// copy bandwidth (the loading bound).
#pragma once

#include <algorithm>
#include <unicorn/spirv.hpp>
#include <vector>

#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"

namespace unicorn::gpu {

class Timestamps {
 public:
  Timestamps(const Context& ctx, uint32_t count)
      : ctx_(ctx),
        count_(count),
        pool_(ctx.device(),
              vk::QueryPoolCreateInfo{}.setQueryType(vk::QueryType::eTimestamp).setQueryCount(count)) {}

  void reset(vk::CommandBuffer cb) { cb.resetQueryPool(*pool_, 0, count_); }
  void write(vk::CommandBuffer cb, uint32_t index) {
    cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *pool_, index);
  }
  // Nanoseconds of every query, after the work has completed.
  std::vector<double> read_ns(uint32_t used) const {
    std::vector<uint64_t> ticks(used);
    const auto r = (*ctx_.device()).getQueryPoolResults(
        *pool_, 0, used, ticks.size() * 8, ticks.data(), 8,
        vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
    if (r != vk::Result::eSuccess) throw Error("gpu: timestamp queries failed");
    std::vector<double> ns(used);
    for (uint32_t i = 0; i < used; ++i) ns[i] = double(ticks[i]) * ctx_.info().timestamp_period_ns;
    return ns;
  }

 private:
  const Context& ctx_;
  uint32_t count_;
  vk::raii::QueryPool pool_;
};

// The median device time in seconds of `repetitions` submissions of what
// `record` records, after one more that warms up.
template <class Record>
double median_seconds(const Context& ctx, Stream& stream, int repetitions, Record&& record) {
  Timestamps ts(ctx, 2);
  std::vector<double> seconds;
  for (int r = 0; r < repetitions + 1; ++r) {
    stream.run_once([&](vk::CommandBuffer cb) {
      ts.reset(cb);
      ts.write(cb, 0);
      record(cb);
      ts.write(cb, 1);
    });
    const auto ns = ts.read_ns(2);
    if (r) seconds.push_back((ns[1] - ns[0]) * 1e-9);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// The probes' sizes shrink by this on a CPU device (lavapipe): its memory is
// the host's, each byte read costs the host's own time, and the host's caches
// are still far smaller (a unicorn-bench start-up on lavapipe spent 1.2 s of
// its 2.2 s reading 8 GiB; notes/build_time.md).
inline uint64_t probe_divisor(const Context& ctx) { return ctx.info().cpu() ? 4 : 1; }

// Read bandwidth in bytes/s: the median of several reads of a buffer far
// larger than any cache (1 GiB, or a quarter of the device-local heap; a
// quarter of that on a CPU device). `kind` picks the memory read: DeviceLocal
// (Vram) or Gtt (host-visible system memory; over PCIe on a discrete GPU).
inline double measure_read_bandwidth(const Context& ctx, int repetitions = 7,
                                     MemoryKind kind = MemoryKind::DeviceLocal) {
  const uint64_t bytes = std::min<uint64_t>(uint64_t(1) << 30, ctx.info().device_local_heap_bytes / 4) /
                         probe_divisor(ctx) / 16 * 16;
  const uint64_t chunk = std::min<uint64_t>(bytes, ctx.info().max_storage_buffer_range / 16 * 16);
  const uint32_t groups = 1024;
  const uint64_t sizes[] = {chunk};
  BufferSet src(ctx, sizes, kind, "bandwidth probe");
  const uint64_t sum_sizes[] = {groups * 4ull};
  BufferSet sums(ctx, sum_sizes, MemoryKind::DeviceLocal, "bandwidth sums");
  KernelCache kernels(ctx, /*cache_dir=*/{});  // one small kernel: not worth a file on disk
  DescriptorArena sets(ctx);
  const Kernel& k = kernels.get("bandwidth", spirv::words(spirv::Module::bandwidth), 2, NoConstants{});
  const vk::DescriptorBufferInfo b[] = {src[0].whole(), sums[0].whole()};
  const vk::DescriptorSet set = sets.make(k, b);
  Stream stream(ctx);
  stream.run_once([&](vk::CommandBuffer cb) { cb.fillBuffer(src[0].handle, 0, VK_WHOLE_SIZE, 0x5a5a5a5a); });
  const uint32_t passes = uint32_t(bytes / chunk);
  return double(chunk) * passes / median_seconds(ctx, stream, repetitions, [&](vk::CommandBuffer cb) {
    for (uint32_t p = 0; p < passes; ++p) record(cb, {&k, set, {uint32_t(chunk / 16)}, {groups, 1, 1}});
  });
}

// Host-to-device copy bandwidth in bytes/s: the median of several copies of a
// host-visible buffer (256 MiB, or an eighth of the device-local heap; a
// quarter of that on a CPU device) into device-local memory — what the
// loader's staged uploads could reach at best.
inline double measure_upload_bandwidth(const Context& ctx, int repetitions = 5) {
  const uint64_t bytes =
      std::min<uint64_t>(uint64_t(256) << 20, ctx.info().device_local_heap_bytes / 8) / probe_divisor(ctx) / 16 * 16;
  const uint64_t sizes[] = {bytes};
  BufferSet host(ctx, sizes, MemoryKind::HostVisible, "upload probe (host)");
  BufferSet device(ctx, sizes, MemoryKind::DeviceLocal, "upload probe (device)");
  std::fill_n(host[0].mapped, bytes, std::byte{0x5a});
  Stream stream(ctx);
  return double(bytes) / median_seconds(ctx, stream, repetitions, [&](vk::CommandBuffer cb) {
    cb.copyBuffer(host[0].handle, device[0].handle, vk::BufferCopy{0, 0, bytes});
  });
}

}  // namespace unicorn::gpu
