// unicorn/gpu/vulkan.hpp — how the engine includes Vulkan-Hpp, in whichever
// mode the host app compiles it.
//
// A host may or may not define VULKAN_HPP_NO_CONSTRUCTORS (a project-wide
// choice: with it, vk:: structs are aggregates and take designated
// initializers; without it they have constructors and do not). The engine's
// headers build vk:: structs only in ways both modes accept: a value-
// initialized struct plus Vulkan-Hpp's setters (`vk::FenceCreateInfo{}` ...
// `.setFlags(...)`), or positional braces for the few structs without sType
// whose constructor takes the members in order (vk::BufferCopy,
// vk::DescriptorBufferInfo, vk::DescriptorPoolSize). tests/install builds the
// tiny engine in each mode.
// Every engine header that names vk:: includes this one.
#pragma once

#if defined(VULKAN_HPP_NO_STRUCT_SETTERS) || defined(VULKAN_HPP_NO_SETTERS)
#error "unicorn: the engine's headers fill Vulkan-Hpp structs with their setters (which work with and without VULKAN_HPP_NO_CONSTRUCTORS); do not define VULKAN_HPP_NO_STRUCT_SETTERS or VULKAN_HPP_NO_SETTERS in translation units that include unicorn headers"
#endif

#include <vulkan/vulkan_raii.hpp>
