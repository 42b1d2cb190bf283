// expect: unicorn: the engine's headers fill Vulkan-Hpp structs with their setters
// A host that turns Vulkan-Hpp's struct setters off cannot include the engine:
// its headers build vk:: structs with the setters, the one way that compiles
// both with and without VULKAN_HPP_NO_CONSTRUCTORS (unicorn/gpu/vulkan.hpp).
#define VULKAN_HPP_NO_STRUCT_SETTERS
#include <unicorn/gpu/vulkan.hpp>
