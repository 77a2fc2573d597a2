// Checks a module image before the driver sees it: cuModuleLoadData takes no length and trusts
// the image's own headers, so a truncated or garbage buffer could make the driver read past it.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include <graphcap/result.h>

namespace graphcap {

enum class ModuleFormat { elf, fatbin, text };

struct CheckedImage {
  ModuleFormat format;
  // What to hand the driver: the caller's bytes, or (text without a terminator) a NUL-terminated
  // copy held in `text_copy`.
  const void* data;
  std::string text_copy;

  const void* driver_image() const noexcept {
    return text_copy.empty() ? data : static_cast<const void*>(text_copy.c_str());
  }
};

// Errc::invalid_argument naming what is wrong for an empty, truncated or unrecognized image.
Result<CheckedImage> check_module_image(std::span<const std::byte> image);

}  // namespace graphcap
