// unicorn/gpu/kernel.hpp — compute pipelines, descriptor sets, recording.
//
// A Kernel is one SPIR-V module specialised by a typed constants struct. Each
// constants struct is a Hana struct whose fields, in order, are the shader's
// `layout(constant_id = i)` values (0, 1, 2, ...): the struct is the single
// place that says what a shader is specialised on, and a mismatch in count or
// type against the module is caught by tests/kernel (every kernel is built there).
// All bindings are storage buffers; per-dispatch integers go in push constants.
#pragma once

#include <array>
#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/members.hpp>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "unicorn/base/linkage.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/device_error.hpp"
#include "unicorn/gpu/pipeline_cache.hpp"

namespace unicorn::gpu {

inline constexpr uint32_t kMaxPushWords = 8;
using PushWords = std::array<uint32_t, kMaxPushWords>;

// Flattens a Hana struct of 4-byte scalars into specialization-constant words.
template <class Spec>
std::vector<uint32_t> spec_words(const Spec& spec) {
  std::vector<uint32_t> words;
  boost::hana::for_each(boost::hana::members(spec), [&](const auto& v) {
    static_assert(sizeof(v) == 4, "unicorn: specialization constants must be 32-bit scalars");
    uint32_t w;
    std::memcpy(&w, &v, 4);
    words.push_back(w);
  });
  return words;
}

// For shaders without specialization constants.
struct NoConstants {};
inline std::vector<uint32_t> spec_words(const NoConstants&) { return {}; }

// The constants in words, field by field ("in_features=5376 out_features=21504 ..."):
// what a pass plan prints (EngineCore::plan).
template <class Spec>
std::string spec_text(const Spec& spec) {
  std::string text;
  boost::hana::for_each(boost::hana::accessors<Spec>(), [&](auto field) {
    const auto value = boost::hana::second(field)(spec);
    if (!text.empty()) text += ' ';
    text += boost::hana::to<const char*>(boost::hana::first(field));
    text += '=';
    if constexpr (std::is_floating_point_v<std::decay_t<decltype(value)>>) {
      char number[32];
      std::snprintf(number, sizeof number, "%g", double(value));
      text += number;
    } else {
      text += std::to_string(value);
    }
  });
  return text;
}
inline std::string spec_text(const NoConstants&) { return {}; }

class Kernel {
 public:
  Kernel(const Context& ctx, std::string name, std::span<const uint32_t> spirv, uint32_t bindings,
         std::span<const uint32_t> spec, const vk::raii::PipelineCache* cache = nullptr)
      : name_(std::move(name)), bindings_(bindings) {
    const auto& dev = ctx.device();
    std::vector<vk::DescriptorSetLayoutBinding> b(bindings);
    for (uint32_t i = 0; i < bindings; ++i)
      b[i] = vk::DescriptorSetLayoutBinding{}
                 .setBinding(i)
                 .setDescriptorType(vk::DescriptorType::eStorageBuffer)
                 .setDescriptorCount(1)
                 .setStageFlags(vk::ShaderStageFlagBits::eCompute);
    set_layout_ = vk::raii::DescriptorSetLayout(
        dev, vk::DescriptorSetLayoutCreateInfo{}.setBindingCount(bindings).setPBindings(b.data()));
    const auto push = vk::PushConstantRange{}
                          .setStageFlags(vk::ShaderStageFlagBits::eCompute)
                          .setOffset(0)
                          .setSize(kMaxPushWords * 4);
    const vk::DescriptorSetLayout set_layout = *set_layout_;
    layout_ = vk::raii::PipelineLayout(dev, vk::PipelineLayoutCreateInfo{}
                                                .setSetLayoutCount(1)
                                                .setPSetLayouts(&set_layout)
                                                .setPushConstantRangeCount(1)
                                                .setPPushConstantRanges(&push));
    const vk::raii::ShaderModule module(
        dev, vk::ShaderModuleCreateInfo{}.setCodeSize(spirv.size_bytes()).setPCode(spirv.data()));
    std::vector<vk::SpecializationMapEntry> entries(spec.size());
    for (uint32_t i = 0; i < spec.size(); ++i)
      entries[i] = vk::SpecializationMapEntry{}.setConstantID(i).setOffset(i * 4).setSize(4);
    const auto spec_info = vk::SpecializationInfo{}
                               .setMapEntryCount(uint32_t(entries.size()))
                               .setPMapEntries(entries.data())
                               .setDataSize(spec.size_bytes())
                               .setPData(spec.data());
    const auto info = vk::ComputePipelineCreateInfo{}
                          .setStage(vk::PipelineShaderStageCreateInfo{}
                                        .setStage(vk::ShaderStageFlagBits::eCompute)
                                        .setModule(*module)
                                        .setPName("main")
                                        .setPSpecializationInfo(&spec_info))
                          .setLayout(*layout_);
    pipeline_ = cache ? vk::raii::Pipeline(dev, *cache, info) : vk::raii::Pipeline(dev, nullptr, info);
  }

  const std::string& name() const { return name_; }
  // Its specialization constants in words (spec_text), where the cache made it.
  const std::string& constants() const { return constants_; }
  uint32_t bindings() const { return bindings_; }
  vk::DescriptorSetLayout set_layout() const { return *set_layout_; }
  vk::PipelineLayout layout() const { return *layout_; }
  vk::Pipeline pipeline() const { return *pipeline_; }

 private:
  friend class KernelCache;
  std::string name_;
  std::string constants_;
  uint32_t bindings_;
  vk::raii::DescriptorSetLayout set_layout_{nullptr};
  vk::raii::PipelineLayout layout_{nullptr};
  vk::raii::Pipeline pipeline_{nullptr};
};

// Pipelines keyed by (module name, constants): built once, shared by all users,
// compiled through the on-disk pipeline cache (gpu/pipeline_cache.hpp). The
// engines on one context share one (Context::kernel_cache), so that an engine
// compiles only what no earlier one did: on a driver that compiles at every
// creation (lavapipe, whose pipeline cache keeps nothing), the tiny model's
// engine took 150 ms to create and the model tests 41 s, 28 s shared
// (notes/build_time.md). Engines may be created from several threads.
class KernelCache {
 public:
  explicit KernelCache(const Context& ctx, const std::filesystem::path& cache_dir = {})
      : ctx_(ctx), disk_(ctx, cache_dir) {}

  template <class Spec>
  const Kernel& get(const std::string& name, std::span<const uint32_t> spirv, uint32_t bindings,
                    const Spec& spec) {
    auto words = spec_words(spec);
    std::string key = name;
    for (uint32_t w : words) key += ":" + std::to_string(w);
    const std::lock_guard lock(mutex_);
    auto it = kernels_.find(key);
    if (it == kernels_.end()) {
      it = kernels_.emplace(key, std::make_unique<Kernel>(ctx_, name, spirv, bindings, words,
                                                          &disk_.handle()))
               .first;
      it->second->constants_ = spec_text(spec);
      disk_.note_new_pipeline();
    }
    return *it->second;
  }
  size_t size() const {
    const std::lock_guard lock(mutex_);
    return kernels_.size();
  }
  // Writes new pipelines to disk now (also done when the cache goes away).
  void save() {
    const std::lock_guard lock(mutex_);
    disk_.save();
  }
  PipelineCache::Stats disk_stats() const {
    const std::lock_guard lock(mutex_);
    return disk_.stats();
  }

 private:
  const Context& ctx_;
  mutable std::mutex mutex_;
  PipelineCache disk_;
  std::map<std::string, std::unique_ptr<Kernel>> kernels_;  // nodes never move: handed-out references stay valid
};

// Descriptor sets that live as long as the arena; pools are added as needed.
class DescriptorArena {
 public:
  explicit DescriptorArena(const Context& ctx) : ctx_(ctx) {}

  vk::DescriptorSet make(const Kernel& k, std::span<const vk::DescriptorBufferInfo> buffers);
  // Frees every set made so far (no recorded work may still use one).
  void clear() {
    pools_.clear();
    left_sets_ = left_buffers_ = 0;
  }

 private:
  static constexpr uint32_t kSetsPerPool = 1024, kBuffersPerPool = 8192;
  void add_pool();
  const Context& ctx_;
  std::vector<vk::raii::DescriptorPool> pools_;
  uint32_t left_sets_ = 0, left_buffers_ = 0;
};

// One recorded kernel launch: what to run, on which buffers, how many groups.
struct Dispatch {
  const Kernel* kernel;
  vk::DescriptorSet set;
  PushWords push{};
  uint32_t groups[3] = {1, 1, 1};
  bool barrier_after = true;  // false when the next dispatch does not read this one's output
};

// Records a dispatch, with a compute→compute barrier after it unless told
// otherwise, so every kernel sees its predecessors' writes.
void record(vk::CommandBuffer cb, const Dispatch& d, bool barrier = true);

// A command pool on one of the context's queues, and helpers to run recorded
// work on it: wait for each submission, or submit now and wait later. On a
// device with two queues each submission signals the next value of the
// stream's timeline semaphore, and may first wait for what another stream has
// finished (`after`), which orders its reads after that work's writes across
// queues; with one queue, submission order does.
class Stream {
 public:
  explicit Stream(const Context& ctx, uint32_t queue_index = 0)
      : ctx_(ctx),
        queue_index_(queue_index),
        pool_(ctx.device(),
              vk::CommandPoolCreateInfo{}
                  .setFlags(vk::CommandPoolCreateFlagBits::eResetCommandBuffer)
                  .setQueueFamilyIndex(ctx.queue_family(queue_index))),
        fence_(ctx.device(), vk::FenceCreateInfo{}),
        // With one queue no semaphore is used (submit()), so none is made.
        timeline_(ctx.has_second_queue() ? timeline_semaphore(ctx) : vk::raii::Semaphore(nullptr)) {}

  vk::raii::CommandBuffer allocate() {
    auto cbs = vk::raii::CommandBuffers(
        ctx_.device(), vk::CommandBufferAllocateInfo{}
                           .setCommandPool(*pool_)
                           .setLevel(vk::CommandBufferLevel::ePrimary)
                           .setCommandBufferCount(1));
    return std::move(cbs[0]);
  }

  static vk::raii::Semaphore timeline_semaphore(const Context& ctx) {
    const auto type = vk::SemaphoreTypeCreateInfo{}.setSemaphoreType(vk::SemaphoreType::eTimeline).setInitialValue(0);
    return vk::raii::Semaphore(ctx.device(), vk::SemaphoreCreateInfo{}.setPNext(&type));
  }

  // Throws gpu::DeviceError when the device reports a failure (lost, out of memory).
  void submit_and_wait(vk::CommandBuffer cb, const Stream* after = nullptr,
                       Submission kind = Submission::Work) {
    submit(cb, after, kind);
    wait();
  }

  // Submits without waiting; wait() (or ready()) before the next submit.
  // `after`: what that stream has finished (its last wait()) comes first.
  // `kind`: Submission::Upload for set-up work that fault injection skips.
  void submit(vk::CommandBuffer cb, const Stream* after = nullptr, Submission kind = Submission::Work);

  // Whether the submission in flight has finished (then wait() returns at once).
  bool ready() const {
    if (!in_flight_) return true;
    bool done = false;
    checked_submit(ctx_.info().name, ctx_.device_lost_flag(), Submission::Wait,
                   [&] { done = fence_.getStatus() != vk::Result::eNotReady; });
    return done;
  }
  bool in_flight() const { return in_flight_; }

  // Waits for the submission in flight, if any.
  void wait() {
    if (!in_flight_) return;
    in_flight_ = false;  // a failed wait leaves nothing to wait for: the device is lost
    checked_submit(ctx_.info().name, ctx_.device_lost_flag(), Submission::Wait, [&] {
      if (ctx_.device().waitForFences(*fence_, VK_TRUE, UINT64_MAX) != vk::Result::eSuccess)
        throw Error("gpu: waiting for the device failed");
    });
    ctx_.device().resetFences(*fence_);
    finished_ = submitted_;
  }

  // Records with `fn(cb)` into a one-time command buffer, submits and waits.
  template <class F>
  void run_once(F&& fn, Submission kind = Submission::Work) {
    auto cb = allocate();
    cb.begin(vk::CommandBufferBeginInfo{}.setFlags(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
    // One-off work (uploads, read-backs) is ordered against everything before
    // and after it on the queue: it is rare, so a full barrier costs nothing.
    full_barrier(*cb);
    fn(*cb);
    full_barrier(*cb);
    cb.end();
    submit_and_wait(*cb, nullptr, kind);
  }

  static void full_barrier(vk::CommandBuffer cb) {
    const auto mb = vk::MemoryBarrier{}
                        .setSrcAccessMask(vk::AccessFlagBits::eMemoryWrite)
                        .setDstAccessMask(vk::AccessFlagBits::eMemoryRead | vk::AccessFlagBits::eMemoryWrite |
                                          vk::AccessFlagBits::eHostRead);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eAllCommands,
                       vk::PipelineStageFlagBits::eAllCommands | vk::PipelineStageFlagBits::eHost,
                       {}, mb, {}, {});
  }

 private:
  const Context& ctx_;
  uint32_t queue_index_;
  vk::raii::CommandPool pool_;
  vk::raii::Fence fence_;
  vk::raii::Semaphore timeline_;
  uint64_t submitted_ = 0, finished_ = 0;  // timeline values: the last signalled, the last waited for
  bool in_flight_ = false;
};

}  // namespace unicorn::gpu

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::gpu {

UNICORN_DECL std::shared_ptr<KernelCache> Context::kernel_cache(const std::filesystem::path& pipeline_dir) const {
  const std::lock_guard lock(kernel_caches_mutex_);
  std::shared_ptr<KernelCache>& cache = kernel_caches_[pipeline_dir.lexically_normal()];
  if (!cache) cache = std::make_shared<KernelCache>(*this, pipeline_dir);
  return cache;
}

UNICORN_DECL vk::DescriptorSet DescriptorArena::make(const Kernel& k, std::span<const vk::DescriptorBufferInfo> buffers) {
  if (buffers.size() != k.bindings())
    throw Error("gpu: kernel " + k.name() + " takes " + std::to_string(k.bindings()) +
                " buffers, got " + std::to_string(buffers.size()));
  if (pools_.empty() || left_sets_ == 0 || left_buffers_ < buffers.size()) add_pool();
  const vk::DescriptorSetLayout layout = k.set_layout();
  auto sets = (*ctx_.device()).allocateDescriptorSets(vk::DescriptorSetAllocateInfo{}
                                                          .setDescriptorPool(*pools_.back())
                                                          .setDescriptorSetCount(1)
                                                          .setPSetLayouts(&layout));
  std::vector<vk::WriteDescriptorSet> writes(buffers.size());
  for (uint32_t i = 0; i < buffers.size(); ++i)
    writes[i] = vk::WriteDescriptorSet{}
                    .setDstSet(sets[0])
                    .setDstBinding(i)
                    .setDescriptorCount(1)
                    .setDescriptorType(vk::DescriptorType::eStorageBuffer)
                    .setPBufferInfo(&buffers[i]);
  ctx_.device().updateDescriptorSets(writes, {});
  --left_sets_;
  left_buffers_ -= uint32_t(buffers.size());
  return sets[0];
}

UNICORN_DECL void DescriptorArena::add_pool() {
  const vk::DescriptorPoolSize size{vk::DescriptorType::eStorageBuffer, kBuffersPerPool};
  pools_.emplace_back(ctx_.device(),
                      vk::DescriptorPoolCreateInfo{}.setMaxSets(kSetsPerPool).setPoolSizeCount(1).setPPoolSizes(&size));
  left_sets_ = kSetsPerPool;
  left_buffers_ = kBuffersPerPool;
}
UNICORN_DECL void Stream::submit(vk::CommandBuffer cb, const Stream* after, Submission kind) {
  if (in_flight_) throw Error("internal: a gpu::Stream submitted again before waiting");
  if (!ctx_.has_second_queue()) {
    // One queue: submission order and each pass's leading barrier order the
    // streams' work, and no semaphore is used (Mesa 22.3's lavapipe can
    // deadlock in its timeline semaphores: a unicorn-bench --batch run hung
    // in the queue thread).
    const auto info = vk::SubmitInfo{}.setCommandBufferCount(1).setPCommandBuffers(&cb);
    checked_submit(ctx_.info().name, ctx_.device_lost_flag(), kind,
                   [&] { ctx_.queue(queue_index_).submit(info, *fence_); });
    in_flight_ = true;
    return;
  }
  const uint64_t signal = submitted_ + 1, wait_value = after ? after->finished_ : 0;
  const vk::Semaphore wait_sem = after ? *after->timeline_ : vk::Semaphore{};
  const vk::PipelineStageFlags wait_stage = vk::PipelineStageFlagBits::eAllCommands;
  const vk::Semaphore signal_sem = *timeline_;
  const auto values = vk::TimelineSemaphoreSubmitInfo{}
                          .setWaitSemaphoreValueCount(wait_value ? 1 : 0)
                          .setPWaitSemaphoreValues(&wait_value)
                          .setSignalSemaphoreValueCount(1)
                          .setPSignalSemaphoreValues(&signal);
  const auto info = vk::SubmitInfo{}
                        .setPNext(&values)
                        .setWaitSemaphoreCount(wait_value ? 1 : 0)
                        .setPWaitSemaphores(&wait_sem)
                        .setPWaitDstStageMask(&wait_stage)
                        .setCommandBufferCount(1)
                        .setPCommandBuffers(&cb)
                        .setSignalSemaphoreCount(1)
                        .setPSignalSemaphores(&signal_sem);
  checked_submit(ctx_.info().name, ctx_.device_lost_flag(), kind,
                 [&] { ctx_.queue(queue_index_).submit(info, *fence_); });
  submitted_ = signal;
  in_flight_ = true;
}

}  // namespace unicorn::gpu

#endif  // UNICORN_DEFINE_HERE

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::gpu {

UNICORN_DECL void record(vk::CommandBuffer cb, const Dispatch& d, bool barrier) {
  cb.bindPipeline(vk::PipelineBindPoint::eCompute, d.kernel->pipeline());
  cb.bindDescriptorSets(vk::PipelineBindPoint::eCompute, d.kernel->layout(), 0, d.set, {});
  cb.pushConstants(d.kernel->layout(), vk::ShaderStageFlagBits::eCompute, 0,
                   sizeof(PushWords), d.push.data());
  cb.dispatch(d.groups[0], d.groups[1], d.groups[2]);
  if (barrier) {
    const auto mb = vk::MemoryBarrier{}
                        .setSrcAccessMask(vk::AccessFlagBits::eShaderWrite)
                        .setDstAccessMask(vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                       vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
  }
}

}  // namespace unicorn::gpu

#endif  // UNICORN_DEFINE_HERE
