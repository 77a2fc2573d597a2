#include <graphcap/module_image.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace graphcap {
namespace {

template <class T>
T load(std::span<const std::byte> image, std::size_t offset) {
  T value{};
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;  // ELF64 and fatbin headers are little-endian, like every CUDA host
}

Error invalid(const std::string& why) {
  return Error(Errc::invalid_argument, "load_module: " + why);
}

// ELF64 (a cubin): both header tables must lie inside the image.
Result<void> check_elf(std::span<const std::byte> image) {
  constexpr std::size_t kHeaderSize = 64;
  if (image.size() < kHeaderSize) return invalid("truncated ELF image (no full ELF64 header)");
  if (static_cast<unsigned char>(image[4]) != 2) return invalid("ELF image is not 64-bit");
  const auto phoff = load<std::uint64_t>(image, 0x20);
  const auto shoff = load<std::uint64_t>(image, 0x28);
  const auto phentsize = load<std::uint16_t>(image, 0x36);
  const auto phnum = load<std::uint16_t>(image, 0x38);
  const auto shentsize = load<std::uint16_t>(image, 0x3A);
  const auto shnum = load<std::uint16_t>(image, 0x3C);
  auto inside = [&](std::uint64_t offset, std::uint64_t count, std::uint64_t size) {
    const std::uint64_t bytes = count * size;  // at most 65535 * 65535: no overflow
    return offset <= image.size() && bytes <= image.size() - offset;
  };
  if (!inside(phoff, phnum, phentsize) || !inside(shoff, shnum, shentsize)) {
    return invalid("truncated ELF image (its header tables extend past the " +
                   std::to_string(image.size()) + " bytes given)");
  }
  return {};
}

// A fatbin: magic, version, header size, then the size of everything after the header.
Result<void> check_fatbin(std::span<const std::byte> image) {
  constexpr std::size_t kHeaderSize = 16;
  if (image.size() < kHeaderSize) return invalid("truncated fatbin image (no full header)");
  const auto header_size = load<std::uint16_t>(image, 6);
  const auto body_size = load<std::uint64_t>(image, 8);
  if (header_size < kHeaderSize || header_size > image.size() ||
      body_size > image.size() - header_size) {
    return invalid("truncated fatbin image (its header declares more than the " +
                   std::to_string(image.size()) + " bytes given)");
  }
  return {};
}

bool is_text_byte(unsigned char c) { return c == '\n' || c == '\r' || c == '\t' || (c >= 0x20 && c < 0x7F); }

}  // namespace

Result<CheckedImage> check_module_image(std::span<const std::byte> image) {
  if (image.empty()) return invalid("empty image");
  const auto* bytes = reinterpret_cast<const unsigned char*>(image.data());
  if (image.size() >= 4 && bytes[0] == 0x7F && bytes[1] == 'E' && bytes[2] == 'L' &&
      bytes[3] == 'F') {
    if (Result<void> ok = check_elf(image); !ok) return ok.error();
    return CheckedImage{ModuleFormat::elf, image.data(), {}};
  }
  if (image.size() >= 4 && load<std::uint32_t>(image, 0) == 0xBA55ED50u) {
    if (Result<void> ok = check_fatbin(image); !ok) return ok.error();
    return CheckedImage{ModuleFormat::fatbin, image.data(), {}};
  }
  // PTX text (or a fake driver's image): printable up to its terminator, and naming a version.
  const auto* end = std::find(bytes, bytes + image.size(), 0);
  const std::string_view text(reinterpret_cast<const char*>(bytes), end - bytes);
  if (!std::all_of(text.begin(), text.end(),
                   [](char c) { return is_text_byte(static_cast<unsigned char>(c)); }) ||
      text.find(".version") == std::string_view::npos) {
    return invalid("unrecognized image of " + std::to_string(image.size()) +
                   " bytes (not an ELF cubin, a fatbin, or PTX text with a .version directive)");
  }
  CheckedImage checked{ModuleFormat::text, image.data(), {}};
  if (end == bytes + image.size()) {  // no terminator inside the span: the driver needs one
    checked.text_copy.assign(text);
  }
  return checked;
}

}  // namespace graphcap
