// The gpu/ layer's data paths under the kernels: the staging ring that carries
// weights to the device, and the on-disk pipeline cache.
#include "kernel_harness.hpp"

#include <fstream>

#include "temp_dir.hpp"

namespace unicorn {
namespace {

// ------------------------------------------------------------------ staging

// The staging ring carries many times what its slots hold, every piece landing
// where it belongs: each slot reused while the others are in flight, pieces
// that fill a slot and pieces that do not, the last one short, and pieces
// large enough to be copied by several threads (the loader's path for every
// weight; the engine's slots are 8 MiB, these 1 MiB).
TEST(StagingRing, CarriesManyTimesWhatItsSlotsHold) {
  Device& d = device();
  constexpr uint64_t kSlot = 1u << 20;
  const uint64_t total = kSlot * gpu::StagingRing::kSlots * 3 + 12345;
  std::vector<std::byte> source(total);
  for (size_t i = 0; i < total; ++i) source[i] = std::byte(uint8_t(i * 131 + (i >> 11)));
  HostBuffer target(total);
  const vk::Buffer to = target.info().buffer;
  {
    gpu::StagingRing ring(d.ctx, kSlot);
    uint64_t done = 0;
    for (uint32_t piece = 0; done < total; ++piece) {
      const uint64_t n = std::min<uint64_t>(piece % 3 == 1 ? kSlot - 4099 : kSlot, total - done);
      ring.submit(std::span<const std::byte>(source).subspan(done, n), [&](vk::CommandBuffer cb, uint32_t slot) {
        cb.copyBuffer(ring.buffer(slot).handle, to, vk::BufferCopy{0, done, n});
      });
      done += n;
    }
    ring.wait_all();
    EXPECT_GT(ring.timing().submissions, 3u * gpu::StagingRing::kSlots);
  }
  size_t wrong = 0, first = total;
  const auto got = target.bytes();
  for (size_t i = 0; i < total; ++i)
    if (got[i] != source[i]) ++wrong, first = std::min(first, i);
  EXPECT_EQ(wrong, 0u) << "the first wrong byte is at " << first;
}

// ------------------------------------------------------------ pipeline cache

// The on-disk pipeline cache: written after new pipelines, read back by the
// next cache, and a damaged or foreign file is ignored (with a reason) and
// replaced — never handed to the driver.
TEST(PipelineCache, WrittenReadBackAndDamagedFilesIgnored) {
  Device& d = device();
  const unicorn::test::TempDir tmp("unicorn-pipeline-cache");
  const std::filesystem::path dir = tmp / "cache";  // made by the first cache that saves
  const auto build = [&](gpu::KernelCache& cache) {
    const auto words = spirv::find("geglu");
    return cache.get("geglu", words, kernels::kGegluBindings, kernels::Geglu{96, 0}).pipeline();
  };
  std::filesystem::path file;
  {
    gpu::KernelCache cache(d.ctx, dir);
    EXPECT_EQ(cache.disk_stats().loaded_bytes, 0u);
    EXPECT_TRUE(build(cache));
    cache.save();
    file = cache.disk_stats().path;
    EXPECT_GT(cache.disk_stats().saved_bytes, 0u);
  }
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  EXPECT_EQ(file.parent_path(), dir);
  const uint64_t size = std::filesystem::file_size(file);
  {
    gpu::KernelCache cache(d.ctx, dir);
    EXPECT_EQ(cache.disk_stats().loaded_bytes, size);
    EXPECT_EQ(cache.disk_stats().ignored, "");
    EXPECT_TRUE(build(cache));
  }
  const auto bytes_of = [&] {
    std::ifstream in(file, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  };
  const auto write = [&](const std::vector<char>& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  };
  std::vector<char> good = bytes_of();
  std::vector<char> foreign = good;
  foreign[16] ^= 0x5a;  // one byte of the pipelineCacheUUID
  const std::pair<std::vector<char>, std::string> damaged[] = {
      {{'n', 'o', 'p', 'e'}, "shorter than a pipeline cache header"},
      {std::vector<char>(64, 0), "not a Vulkan pipeline cache"},
      {foreign, "written by another device or driver"},
  };
  for (const auto& [bytes, why] : damaged) {
    SCOPED_TRACE(why);
    write(bytes);
    {
      gpu::KernelCache cache(d.ctx, dir);
      EXPECT_EQ(cache.disk_stats().loaded_bytes, 0u);
      EXPECT_EQ(cache.disk_stats().ignored, why);
      EXPECT_TRUE(build(cache));
    }  // replaced on the way out
    gpu::KernelCache again(d.ctx, dir);
    EXPECT_EQ(again.disk_stats().ignored, "");
    EXPECT_GT(again.disk_stats().loaded_bytes, 0u);
  }
  {
    gpu::KernelCache off(d.ctx, std::filesystem::path{});
    EXPECT_EQ(off.disk_stats().path, "");
    EXPECT_TRUE(build(off));
  }
}

}  // namespace
}  // namespace unicorn
