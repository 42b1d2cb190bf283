// unicorn/gpu/staging.hpp — host-to-device uploads through a ring of staging
// buffers, so that reading the file and moving bytes to the device overlap.
//
// Loading a model is a long run of (copy a piece of the memory-mapped file into
// host-visible memory, let the device pull it into place). One staging buffer
// serialises the two halves; with a ring, the host fills one slot while the
// device drains the others, and the host's copy itself is spread over several
// threads: copying out of a file mapping is bound by page faults and page-cache
// reads, which scale with cores, not by one core's memcpy.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "unicorn/base/linkage.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/device_error.hpp"
#include "unicorn/gpu/memory.hpp"

namespace unicorn::gpu {

// Threads kept for large copies, made on first use and kept for the process:
// starting them for every staged piece cost more than copying a medium tensor
// (a 6 MB projection) and left such pieces to one or three threads.
// One copy runs at a time; callers on other threads wait their turn.
class CopyThreads {
 public:
  explicit CopyThreads(unsigned count) : count_(count) {
    for (unsigned i = 1; i < count; ++i) threads_.emplace_back([this, i] { serve(i); });
  }
  ~CopyThreads() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      ++generation_;
    }
    wake_.notify_all();
  }  // the jthreads join here
  unsigned count() const { return count_; }
  // Runs job(i) for i in [0, n) (n <= count()), on this thread and n - 1 others.
  void run(unsigned n, const std::function<void(unsigned)>& job) {
    std::lock_guard turn(turn_);
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      active_ = n;
      pending_ = n - 1;
      ++generation_;
    }
    wake_.notify_all();
    job(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void serve(unsigned i) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(unsigned)>* job = nullptr;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stopping_) return;
        if (i >= active_) continue;
        job = job_;
      }
      (*job)(i);
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
  unsigned count_;
  std::mutex turn_, mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;
  unsigned active_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::vector<std::jthread> threads_;  // last: joined before the members they use go
};

CopyThreads& copy_threads();

// memcpy over up to 16 threads, in shares of at least 256 KiB (one thread
// below 512 KiB).
void parallel_copy(std::byte* dst, const std::byte* src, size_t bytes);

class StagingRing {
 public:
  // Four slots: with three of 8 MiB the host waited 0.06-0.07 s of a 27B
  // load for the device, with four 0.02-0.03 s; five or six gained nothing
  // (EngineCore::kStagingBytes says why the ring is small).
  static constexpr uint32_t kSlots = 4;

  StagingRing(const Context& ctx, uint64_t slot_bytes)
      : ctx_(ctx),
        slot_bytes_(slot_bytes),
        pool_(ctx.device(), vk::CommandPoolCreateInfo{}
                                .setFlags(vk::CommandPoolCreateFlagBits::eResetCommandBuffer)
                                .setQueueFamilyIndex(ctx.queue_family())) {
    std::array<uint64_t, kSlots> sizes;
    sizes.fill(slot_bytes);
    buffers_ = BufferSet(ctx, sizes, MemoryKind::HostVisible, "staging buffers");
    auto cbs = vk::raii::CommandBuffers(
        ctx.device(), vk::CommandBufferAllocateInfo{}
                          .setCommandPool(*pool_)
                          .setLevel(vk::CommandBufferLevel::ePrimary)
                          .setCommandBufferCount(kSlots));
    for (uint32_t i = 0; i < kSlots; ++i) {
      slots_[i].commands = std::move(cbs[i]);
      slots_[i].fence = vk::raii::Fence(ctx.device(), vk::FenceCreateInfo{});
    }
  }
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing() {
    try {
      wait_all();
    } catch (...) {  // a lost device: nothing left to wait for
    }
  }

  uint64_t slot_bytes() const { return slot_bytes_; }
  const Buffer& buffer(uint32_t slot) const { return buffers_[slot]; }

  // Where the host's time went, for a loader's report: waiting for a slot
  // (the device still busy with it), copying into it, recording and
  // submitting its commands.
  struct Timing {
    double wait_seconds = 0, copy_seconds = 0, submit_seconds = 0;
    uint64_t submissions = 0;
  };
  const Timing& timing() const { return timing_; }

  // Copies `src` (at most slot_bytes) into the next slot once the device is
  // done with it, then records `work(cb, slot)` — commands reading that slot's
  // buffer — and submits them without waiting.
  template <class F>
  void submit(std::span<const std::byte> src, F&& work) {
    if (src.size() > slot_bytes_) throw Error("internal: a staged upload larger than its buffer");
    const uint32_t slot = next_;
    next_ = (next_ + 1) % kSlots;
    Slot& s = slots_[slot];
    const auto t0 = std::chrono::steady_clock::now();
    wait(s);
    const auto t1 = std::chrono::steady_clock::now();
    parallel_copy(buffers_[slot].mapped, src.data(), src.size());
    const auto t2 = std::chrono::steady_clock::now();
    s.commands.reset();
    s.commands.begin(vk::CommandBufferBeginInfo{}.setFlags(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
    work(*s.commands, slot);
    s.commands.end();
    const vk::CommandBuffer cb = *s.commands;
    checked_submit(ctx_.info().name, ctx_.device_lost_flag(), Submission::Upload, [&] {
      ctx_.queue().submit(vk::SubmitInfo{}.setCommandBufferCount(1).setPCommandBuffers(&cb), *s.fence);
    });
    s.in_flight = true;
    const auto t3 = std::chrono::steady_clock::now();
    timing_.wait_seconds += seconds(t0, t1);
    timing_.copy_seconds += seconds(t1, t2);
    timing_.submit_seconds += seconds(t2, t3);
    timing_.submissions++;
  }

  // Returns once every submitted upload has finished on the device.
  void wait_all() {
    const auto t0 = std::chrono::steady_clock::now();
    for (Slot& s : slots_) wait(s);
    timing_.wait_seconds += seconds(t0, std::chrono::steady_clock::now());
  }

 private:
  struct Slot {
    vk::raii::CommandBuffer commands{nullptr};
    vk::raii::Fence fence{nullptr};
    bool in_flight = false;
  };
  void wait(Slot& s) {
    if (!s.in_flight) return;
    s.in_flight = false;  // whatever the wait says, this slot's upload is over
    vk::Result r = vk::Result::eSuccess;
    try {
      r = ctx_.device().waitForFences(*s.fence, VK_TRUE, UINT64_MAX);
    } catch (const vk::SystemError& e) {
      r = vk::Result(e.code().value());
    }
    if (r != vk::Result::eSuccess) {
      if (r == vk::Result::eErrorDeviceLost) ctx_.device_lost_flag() = true;
      throw DeviceError(r, "gpu: " + ctx_.info().name + ": an upload failed: " + device_error_text(r));
    }
    ctx_.device().resetFences(*s.fence);
  }

  static double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }

  const Context& ctx_;
  uint64_t slot_bytes_;
  Timing timing_;
  vk::raii::CommandPool pool_;
  BufferSet buffers_;
  std::array<Slot, kSlots> slots_;
  uint32_t next_ = 0;
};

}  // namespace unicorn::gpu

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::gpu {

UNICORN_DECL CopyThreads& copy_threads() {
  static CopyThreads threads(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  return threads;
}

UNICORN_DECL void parallel_copy(std::byte* dst, const std::byte* src, size_t bytes) {
  constexpr size_t kPerThreadMin = 256u << 10;
  const size_t threads = std::min<size_t>(copy_threads().count(), bytes / kPerThreadMin);
  if (threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t share = (bytes / threads + 63) / 64 * 64;  // cache-line-aligned shares
  copy_threads().run(unsigned(threads), [=](unsigned i) {
    const size_t begin = i * share;
    if (begin < bytes) std::memcpy(dst + begin, src + begin, std::min(share, bytes - begin));
  });
}

}  // namespace unicorn::gpu

#endif  // UNICORN_DEFINE_HERE
