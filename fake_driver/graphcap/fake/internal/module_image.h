// The fake's module image format: NUL-terminated PTX-like text whose first line is a magic
// comment, with one ".entry NAME" line per kernel. A real driver rejects it cleanly.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphcap::fake::internal {

inline constexpr std::string_view kModuleMagic = "// graphcap fake module\n";

std::vector<std::byte> build_module_image(std::initializer_list<std::string_view> kernels);
std::vector<std::byte> build_module_image(const std::vector<std::string>& kernels);

// The kernel names of a fake image, or nullopt when `image` does not start with the magic line.
// The image has no length: reads stop at its terminating NUL.
std::optional<std::vector<std::string>> parse_module_image(const char* image);

}  // namespace graphcap::fake::internal
