// libFuzzer target: the module loader. Arbitrary bytes go through check_module_image, then
// Device::load_module on the fake driver, then a kernel lookup by a name taken from the input.
// Nothing may crash, read out of bounds (AddressSanitizer) or hit undefined behaviour; and:
//   - check_module_image refuses only with Errc::invalid_argument, and what it accepts is what
//     its format says (an ELF64 or fatbin header that fits, or text naming a version whose driver
//     image is NUL-terminated);
//   - load_module refuses before the driver exactly what check_module_image refuses, and
//     otherwise succeeds or reports the driver's refusal (Errc::driver naming cuModuleLoadData);
//   - a kernel lookup succeeds or is Errc::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>
#include <graphcap/module_image.h>

namespace {

using namespace graphcap;

[[noreturn]] void broken(const char* invariant, const std::string& detail = {}) {
  std::fprintf(stderr, "module_loader invariant broken: %s %s\n", invariant, detail.c_str());
  std::abort();
}

struct World {
  World() {
    set_log_sink([](LogLevel, std::string_view) {});
    driver.register_typed_kernel<>("k", [](fake::KernelContext&) {});
    driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, std::uint32_t>(
        "add", [](fake::KernelContext&) {});
    Result<std::unique_ptr<Device>> opened = Device::open(driver);
    if (!opened) broken("the device opens", to_string(opened.error()));
    device = std::move(*opened);
  }
  fake::FakeDriver driver{fake::FakeDriverOptions{.record_calls = false}};
  std::unique_ptr<Device> device;
};

// Never destroyed: closing a device during static destruction would reach the fake driver's
// (and graphcap's) thread_local state after the main thread's thread_local destructors ran.
World& world() {
  static World* instance = new World;
  return *instance;
}

void check_accepted(const CheckedImage& checked, std::span<const std::byte> image) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(image.data());
  switch (checked.format) {
    case ModuleFormat::elf:
      if (image.size() < 64 || bytes[0] != 0x7F || bytes[1] != 'E' || bytes[2] != 'L' ||
          bytes[3] != 'F') {
        broken("an accepted ELF image has an ELF64 header");
      }
      break;
    case ModuleFormat::fatbin:
      if (image.size() < 16) broken("an accepted fatbin has a full header");
      break;
    case ModuleFormat::text: {
      const void* handed = checked.driver_image();
      if (handed == image.data()) {
        // The caller's bytes: the terminator must lie inside them.
        if (std::memchr(image.data(), 0, image.size()) == nullptr) {
          broken("text handed to the driver in place is NUL-terminated inside the image");
        }
      } else if (handed != checked.text_copy.c_str()) {
        broken("text is handed to the driver from the image or from its copy");
      }
      const std::string_view text(static_cast<const char*>(handed));
      if (text.find(".version") == std::string_view::npos) broken("accepted text names a version");
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = world();
  const std::span<const std::byte> image(reinterpret_cast<const std::byte*>(data), size);

  Result<CheckedImage> checked = check_module_image(image);
  if (checked) {
    check_accepted(*checked, image);
  } else if (checked.error().code() != Errc::invalid_argument) {
    broken("check_module_image refuses with invalid_argument", to_string(checked.error()));
  }

  Result<Module> module = w.device->load_module(image);
  if (!module) {
    const Error& error = module.error();
    if (!checked) {
      if (error.code() != Errc::invalid_argument) broken("refused before the driver", to_string(error));
    } else if (error.code() != Errc::driver ||
               error.message().find("cuModuleLoadData") == std::string::npos) {
      broken("a checked image is loaded or refused by the driver by name", to_string(error));
    }
    return 0;
  }
  if (!checked) broken("load_module loaded an image check_module_image refused");

  // A kernel name from the input's last bytes (possibly empty, with NULs, or absurd).
  const std::size_t take = size < 24 ? size : 24;
  const std::string name(reinterpret_cast<const char*>(data + size - take), take);
  for (std::string_view candidate : {std::string_view(name), std::string_view("k"),
                                     std::string_view("add"), std::string_view("")}) {
    Result<Kernel> kernel = module->kernel(candidate);
    if (!kernel && kernel.error().code() != Errc::invalid_argument) {
      broken("a kernel lookup succeeds or is invalid_argument", to_string(kernel.error()));
    }
    if (kernel && kernel->name() != candidate) broken("a kernel keeps its name");
  }
  return 0;
}
