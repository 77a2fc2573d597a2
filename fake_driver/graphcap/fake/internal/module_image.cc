#include <graphcap/fake/internal/module_image.h>

namespace graphcap::fake::internal {
namespace {
constexpr std::string_view kEntry = ".entry ";
}

std::vector<std::byte> build_module_image(std::initializer_list<std::string_view> kernels) {
  return build_module_image(std::vector<std::string>(kernels.begin(), kernels.end()));
}

std::vector<std::byte> build_module_image(const std::vector<std::string>& kernels) {
  std::string text(kModuleMagic);
  text += ".version 8.0\n.target fake\n";
  for (const std::string& name : kernels) {
    text += kEntry;
    text += name;
    text += '\n';
  }
  std::vector<std::byte> image(text.size() + 1, std::byte{0});  // + the terminating NUL
  for (std::size_t i = 0; i < text.size(); ++i) image[i] = static_cast<std::byte>(text[i]);
  return image;
}

std::optional<std::vector<std::string>> parse_module_image(const char* image) {
  // strncmp-style: stops at the first difference, so never past the image's NUL.
  for (std::size_t i = 0; i < kModuleMagic.size(); ++i) {
    if (image[i] != kModuleMagic[i]) return std::nullopt;
  }
  std::vector<std::string> names;
  const char* cursor = image + kModuleMagic.size();
  while (*cursor != '\0') {
    const char* line = cursor;
    while (*cursor != '\0' && *cursor != '\n') ++cursor;
    std::string_view text(line, static_cast<std::size_t>(cursor - line));
    if (*cursor == '\n') ++cursor;
    if (text.substr(0, kEntry.size()) == kEntry) {
      std::string_view name = text.substr(kEntry.size());
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.remove_suffix(1);
      if (!name.empty()) names.emplace_back(name);
    }
  }
  return names;
}

}  // namespace graphcap::fake::internal
