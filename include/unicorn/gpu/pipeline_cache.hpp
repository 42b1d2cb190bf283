// unicorn/gpu/pipeline_cache.hpp — compiled pipelines kept on disk between runs.
//
// Creating an engine specialises and compiles every kernel it records (dozens
// of pipelines). The driver's compiled code goes into a VkPipelineCache that is
// read at start-up and written back when new pipelines were made, so a second
// start skips the compiler. One file per device and driver build, in the
// folder the engine is given (EngineOptions::pipeline_cache; the tools pass
// $UNICORN_PIPELINE_CACHE, else $XDG_CACHE_HOME/unicorn, else ~/.cache/unicorn:
// tools/tuning_env.hpp):
//
//   <folder>/pipelines-<vendor>-<device>-<pipelineCacheUUID>.bin
//
// An empty folder keeps nothing on disk. A file that is truncated,
// foreign or from another driver is ignored (and replaced), never handed to the
// driver: the header is checked against this device first. Writes go through
// io::AtomicFile (a temporary file renamed into place), so concurrent engines
// never see half a file.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>

#include "unicorn/base/linkage.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/io/file_output.hpp"

namespace unicorn::gpu {

// Vulkan's pipeline cache header, version one (the spec's
// VkPipelineCacheHeaderVersionOne): what identifies the device that wrote it.
struct PipelineCacheHeader {
  uint32_t header_size;
  uint32_t header_version;
  uint32_t vendor_id;
  uint32_t device_id;
  uint8_t uuid[VK_UUID_SIZE];
};
static_assert(sizeof(PipelineCacheHeader) == 32);

class PipelineCache {
 public:
  // What happened at start-up, for reports (unicorn-bench prints it).
  struct Stats {
    std::string path;          // empty: caching on disk is off
    uint64_t loaded_bytes = 0;  // 0: nothing usable was on disk
    std::string ignored;       // why a file that was there was not used
    uint64_t saved_bytes = 0;
  };

  // `dir`: the folder of the cache files; empty: nothing on disk.
  explicit PipelineCache(const Context& ctx, const std::filesystem::path& dir = {})
      : device_(ctx.device()) {
    const auto p = ctx.physical().getProperties();
    expected_ = {32, 1, p.vendorID, p.deviceID, {}};
    std::memcpy(expected_.uuid, p.pipelineCacheUUID.data(), VK_UUID_SIZE);
    std::vector<char> initial;
    if (!dir.empty()) {
      char name[96];
      std::snprintf(name, sizeof name, "pipelines-%04x-%04x-", p.vendorID, p.deviceID);
      std::string file = name;
      for (uint8_t b : expected_.uuid) {
        std::snprintf(name, sizeof name, "%02x", b);
        file += name;
      }
      path_ = dir / (file + ".bin");
      stats_.path = path_.string();
      initial = read_valid(path_);
    }
    stats_.loaded_bytes = initial.size();
    cache_ = vk::raii::PipelineCache(
        ctx.device(), vk::PipelineCacheCreateInfo{}
                          .setInitialDataSize(initial.size())
                          .setPInitialData(initial.empty() ? nullptr : initial.data()));
  }

  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;
  // Pipelines made after the last save are not lost when the engine goes away.
  ~PipelineCache() {
    try {
      save();
    } catch (...) {  // a cache that cannot be written costs only the next start's compile time
    }
  }

  const vk::raii::PipelineCache& handle() const { return cache_; }
  const Stats& stats() const { return stats_; }
  // Counts pipelines created through this cache since the last save.
  void note_new_pipeline() { dirty_ = true; }

  // Writes the cache if it gained pipelines; a failure to write is reported in
  // stats().ignored, never thrown: the engine works the same without the file.
  void save();

 private:
  // The file's bytes when its header names this device and driver, else none.
  std::vector<char> read_valid(const std::filesystem::path& path, bool quiet = false);
  std::vector<char> reject(const char* why, bool quiet);

  const vk::raii::Device& device_;
  PipelineCacheHeader expected_{};
  std::filesystem::path path_;
  vk::raii::PipelineCache cache_{nullptr};
  Stats stats_;
  bool dirty_ = false;
};

}  // namespace unicorn::gpu

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::gpu {

UNICORN_DECL void PipelineCache::save() {
  if (!dirty_ || path_.empty()) return;
  dirty_ = false;
  // Another engine (this process or another) may have written the file since
  // it was read: merge its pipelines in, so that writers add up.
  if (const std::vector<char> on_disk = read_valid(path_, /*quiet=*/true); !on_disk.empty()) {
    const vk::raii::PipelineCache theirs(
        device_, vk::PipelineCacheCreateInfo{}.setInitialDataSize(on_disk.size()).setPInitialData(on_disk.data()));
    cache_.merge(*theirs);
  }
  const std::vector<uint8_t> data = cache_.getData();
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  try {
    io::write_file(path_, std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
  } catch (const Error& e) {
    stats_.ignored = std::string("could not write: ") + e.what();
    return;
  }
  stats_.saved_bytes = data.size();
}

UNICORN_DECL std::vector<char> PipelineCache::read_valid(const std::filesystem::path& path, bool quiet) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  std::vector<char> data(size > 0 ? size_t(size) : 0);
  in.seekg(0);
  if (!in.read(data.data(), std::streamsize(data.size()))) return reject("unreadable", quiet);
  PipelineCacheHeader h{};
  if (data.size() < sizeof h) return reject("shorter than a pipeline cache header", quiet);
  std::memcpy(&h, data.data(), sizeof h);
  if (h.header_size < sizeof h || h.header_size > data.size() || h.header_version != 1)
    return reject("not a Vulkan pipeline cache", quiet);
  if (h.vendor_id != expected_.vendor_id || h.device_id != expected_.device_id ||
      std::memcmp(h.uuid, expected_.uuid, VK_UUID_SIZE) != 0)
    return reject("written by another device or driver", quiet);
  return data;
}

UNICORN_DECL std::vector<char> PipelineCache::reject(const char* why, bool quiet) {
  if (quiet) return {};
  stats_.ignored = why;
  dirty_ = true;  // replace it with this device's cache at the next save
  return {};
}

}  // namespace unicorn::gpu

#endif  // UNICORN_DEFINE_HERE
