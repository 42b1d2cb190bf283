// host_check GOT REF TOLERANCE — the one translation unit a host project
// (tests/install/host_project) writes itself. It includes Vulkan-Hpp first and
// builds a struct in the host's own style (constructors, or designated
// initializers under VULKAN_HPP_NO_CONSTRUCTORS), then the engine's public
// header beside it: unicorn must compile in either mode and impose neither.
// Then it checks host-tiny's logits against the golden file (compare_logits.hpp).
#include <type_traits>
#include <vulkan/vulkan.hpp>

#include <unicorn/engine.hpp>

#include "compare_logits.hpp"

#if HOST_CHOSE_NO_CONSTRUCTORS
#ifndef VULKAN_HPP_NO_CONSTRUCTORS
#error "host_check: the host defines VULKAN_HPP_NO_CONSTRUCTORS, but this translation unit does not see it"
#endif
static_assert(std::is_aggregate_v<vk::BufferCreateInfo>,
              "host_check: VULKAN_HPP_NO_CONSTRUCTORS is defined, yet vk::BufferCreateInfo has constructors");
[[maybe_unused]] constexpr vk::BufferCopy kHostCopy{.srcOffset = 0, .dstOffset = 64, .size = 16};
#else
#ifdef VULKAN_HPP_NO_CONSTRUCTORS
#error "host_check: VULKAN_HPP_NO_CONSTRUCTORS is defined though the host did not ask for it: unicorn::unicorn imposes a Vulkan-Hpp mode on its users"
#endif
static_assert(!std::is_aggregate_v<vk::BufferCreateInfo>,
              "host_check: vk::BufferCreateInfo has no constructors, though the host did not define VULKAN_HPP_NO_CONSTRUCTORS");
[[maybe_unused]] constexpr vk::BufferCopy kHostCopy(0, 64, 16);
#endif
static_assert(kHostCopy.dstOffset == 64);

int main(int argc, char** argv) { return install_test::check_logits_main(argc, argv); }
