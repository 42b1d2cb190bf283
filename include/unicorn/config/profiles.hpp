// unicorn/config/profiles.hpp — hardware profiles: the pools a machine has
// and how many bytes each holds, as types.
//
//   profiles::Phoenix<GiB(16)>            Radeon 780M + XDNA1, 16 GiB carve-out, 32 GiB RAM
//   profiles::Phoenix<MiB(512), GiB(64)>  512 MiB carve-out, 64 GiB RAM
//   profiles::StrixPoint<GiB(8)>, profiles::DiscreteGpu<GiB(16)>, profiles::H100<>,
//   profiles::Lavapipe<>, profiles::Generic (the default: unbounded, never fails)
//
// Capacities are what the compile-time checks compare the layout against; the
// run-time check (gpu/memory.hpp, check_pools_fit) then compares it against the
// actual device's Vulkan heaps, which are the final word.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>

#include "unicorn/config/placement.hpp"

namespace unicorn {

constexpr uint64_t KiB(uint64_t n) { return n << 10; }
constexpr uint64_t MiB(uint64_t n) { return n << 20; }
constexpr uint64_t GiB(uint64_t n) { return n << 30; }

// A capacity no layout reaches: the generic profile's pools.
inline constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

struct HardwareProfile {
  std::string_view name;
  std::array<uint64_t, kPoolCount> capacity{};  // bytes per pool; 0: the machine lacks it
  bool has_npu = false;
  // Vram and Gtt are one heap of system memory (lavapipe): they are also
  // checked together, against the Vram capacity.
  bool vram_and_gtt_share_one_heap = false;

  constexpr uint64_t capacity_of(Pool p) const { return capacity[size_t(p)]; }
};

template <class H>
concept HardwareProfileType = requires {
  { H::kProfile } -> std::convertible_to<HardwareProfile>;
};

namespace profiles {

// NPU on-chip memory (compute tiles' data memory + memory tiles), from:
// - Linux docs, accel/amdxdna/amdnpu.rst: each column has 4 rows of compute
//   tiles and 1 memory tile; Phoenix/Hawk Point are 4x5 (5 columns), Strix
//   Point 4x8 (8 columns);
// - AMD UG1603 "AIE-ML / AIE-ML v2 Memory Tile": 512 KB per memory tile;
// - mlir-aie's XDNA architecture reference: ~64 KB data memory per compute tile.
// Phoenix: 20 x 64 KiB + 5 x 512 KiB = 3.75 MiB; Strix: 32 x 64 KiB + 8 x 512 KiB
// = 6 MiB. Megabytes, not gigabytes: a whole Gemma 3 layer never fits.
inline constexpr uint64_t kXdna1SramBytes = 20 * KiB(64) + 5 * KiB(512);
inline constexpr uint64_t kXdna2SramBytes = 32 * KiB(64) + 8 * KiB(512);

// Any device: unbounded Vram and Gtt, no NPU. The default profile, so every
// deployment that names none compiles exactly as before.
struct Generic {
  static constexpr HardwareProfile kProfile{
      .name = "generic GPU (unbounded; the run-time heap check decides)",
      .capacity = {kUnbounded, kUnbounded, 0, 0}};
};

// AMD Ryzen 7040/8040 (Phoenix/Hawk Point): Radeon 780M + XDNA1 NPU on unified
// DDR5. The carve-out (the BIOS "UMA frame buffer") is the Vram pool; Gtt is the
// rest of system memory, the most the GPU can map (Linux's amdgpu driver caps
// GTT lower by default — amdgpu.gttsize / ttm.pages_limit — and the run-time
// heap check reads the real limit).
template <uint64_t CarveOut, uint64_t SystemRam = GiB(32)>
struct Phoenix {
  static_assert(CarveOut >= MiB(512) && CarveOut <= GiB(16),
                "unicorn: the Phoenix VRAM carve-out (BIOS UMA frame buffer) is 512 MiB to 16 GiB");
  static_assert(SystemRam > CarveOut, "unicorn: the carve-out must leave system memory");
  static constexpr HardwareProfile kProfile{
      .name = "AMD Phoenix (Radeon 780M + XDNA1 NPU)",
      .capacity = {CarveOut, SystemRam - CarveOut, kXdna1SramBytes, 0},
      .has_npu = true};
};

// AMD Ryzen AI 300 (Strix Point): Radeon 890M + XDNA2 NPU; the carve-out
// ("variable graphics memory") goes up to 3/4 of system memory.
template <uint64_t CarveOut, uint64_t SystemRam = GiB(32)>
struct StrixPoint {
  static_assert(CarveOut >= MiB(512) && CarveOut <= SystemRam / 4 * 3,
                "unicorn: the Strix Point VRAM carve-out is 512 MiB to 3/4 of system memory");
  static constexpr HardwareProfile kProfile{
      .name = "AMD Strix Point (Radeon 890M + XDNA2 NPU)",
      .capacity = {CarveOut, SystemRam - CarveOut, kXdna2SramBytes, 0},
      .has_npu = true};
};

// A discrete GPU: its own memory, and system memory it reads over PCIe.
template <uint64_t Vram = GiB(16), uint64_t SystemRam = GiB(64)>
struct DiscreteGpu {
  static constexpr HardwareProfile kProfile{.name = "discrete GPU",
                                            .capacity = {Vram, SystemRam, 0, 0}};
};

// NVIDIA H100 80GB (the project's GPU machine; 128 GiB of host memory there).
template <uint64_t SystemRam = GiB(128)>
struct H100 {
  static constexpr HardwareProfile kProfile{.name = "NVIDIA H100 80GB",
                                            .capacity = {GiB(80), SystemRam, 0, 0}};
};

// Mesa lavapipe (CPU Vulkan): one heap of system memory is both pools.
template <uint64_t SystemRam = GiB(16)>
struct Lavapipe {
  static constexpr HardwareProfile kProfile{.name = "Mesa lavapipe",
                                            .capacity = {SystemRam, SystemRam, 0, 0},
                                            .vram_and_gtt_share_one_heap = true};
};

inline constexpr HardwareProfile kGeneric = Generic::kProfile;

}  // namespace profiles
}  // namespace unicorn
