// The program's GRAPHCAP_KERNELs (a list built by their static initializers) and what their
// bodies' checked pointers do with an access outside their memory.
#include <graphcap/fake/compiled_kernel.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>

#include <graphcap/fake/internal/module_image.h>

namespace graphcap::kernel {
namespace detail {
namespace {

std::string index_text(const Index3& index) {
  return "(" + std::to_string(index.x) + ", " + std::to_string(index.y) + ", " +
         std::to_string(index.z) + ")";
}

std::string hex(CUdeviceptr value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", value);
  return text;
}

}  // namespace

std::byte* slow_access(PointerParam* param, CUdeviceptr address, std::size_t bytes,
                       std::size_t align, bool writable) {
  if (param != nullptr && param->resolved && param->context != nullptr) {
    const fake::KernelContext::DeviceRange& range = param->range;
    const CUdeviceptr from = address - range.base;  // wraps below the base: refused below
    if (from <= range.size && bytes <= range.size - from && address % align == 0) {
      if (param->watched) param->context->watch_access(param->index, address, bytes, writable);
      if (param->tracked) param->note(address, bytes, writable);
      return range.host + from;
    }
  }
  return refuse_access(param, address, bytes, align);
}

void PointerParam::restart(Span& span, CUdeviceptr address, std::size_t bytes, bool write) {
  if (span.end != 0) context->accessed(span.begin, span.end - span.begin, write);
  span = {address, address + bytes};
}

void PointerParam::flush() {
  if (reading.end != 0) context->accessed(reading.begin, reading.end - reading.begin, false);
  if (writing.end != 0) context->accessed(writing.begin, writing.end - writing.begin, true);
  reading = writing = {};
}

std::byte* refuse_access(PointerParam* param, CUdeviceptr address, std::size_t bytes,
                         std::size_t align) {
  // A pointer the body made (nullptr, or default-constructed) belongs to no parameter.
  thread_local PointerParam unbound;
  if (param == nullptr) {
    param = &unbound;
    param->context = position.context;
    param->resolved = false;
    param->why = address == 0 ? "is a null device pointer"
                              : "is not derived from a pointer parameter";
  }
  if (param->scratch.size() < bytes + align) param->scratch.resize(bytes + align);
  const auto base = reinterpret_cast<std::uintptr_t>(param->scratch.data());
  std::byte* scratch = param->scratch.data() + (align - base % align) % align;
  std::memset(scratch, 0, bytes);
  if (param->context == nullptr) return scratch;  // not inside a launch: nothing to report to
  if (param->reported && param != &unbound) return scratch;
  param->reported = true;
  const std::string who =
      (param == &unbound ? std::string("a pointer")
                         : "parameter " + std::to_string(param->index) + " (" +
                               std::string(param->name) + ")") +
      ", thread " + index_text(position.thread) + " of block " + index_text(position.block) + ": ";
  CUresult code = CUDA_ERROR_ILLEGAL_ADDRESS;
  std::string what;
  if (!param->resolved) {
    what = hex(address) + " (" + std::to_string(bytes) + " bytes) " + param->why;
  } else if (address % align != 0) {
    what = hex(address) + " is not aligned to " + std::to_string(align) + " bytes";
    code = CUDA_ERROR_MISALIGNED_ADDRESS;
  } else if (address < param->range.base) {
    what = hex(address) + " (" + std::to_string(bytes) + " bytes) lies " +
           std::to_string(param->range.base - address) + " bytes before the start of the " +
           (param->range.buffer ? "Buffer" : "allocation") + " at " + hex(param->range.base) +
           " of " + std::to_string(param->range.size) + " bytes";
  } else {
    what = fake::KernelContext::overrun(param->range, address, bytes);
  }
  param->context->violation(who + what, code);
  return scratch;
}

}  // namespace detail

void wait_for_predecessor() {
  if (const fake::KernelContext* context = detail::position.context) {
    context->wait_for_predecessor();
  }
}

void set_condition(CUgraphConditionalHandle handle, unsigned value) {
  if (const fake::KernelContext* context = detail::position.context) {
    context->set_condition_handle(handle, value);
  }
}

}  // namespace graphcap::kernel

namespace graphcap::fake {
namespace {

// The head of the program's list; constant-initialized, so every static initializer that adds
// to it may run first.
constinit std::atomic<const CompiledKernel*> g_compiled{nullptr};

// By name: a kernel defined in several translation units (a header's GRAPHCAP_KERNEL) counts once.
std::map<std::string_view, const CompiledKernel*> by_name() {
  std::map<std::string_view, const CompiledKernel*> kernels;
  for (const CompiledKernel* k = g_compiled.load(std::memory_order_acquire); k != nullptr;
       k = k->next) {
    kernels.emplace(k->name, k);
  }
  return kernels;
}

}  // namespace

std::size_t register_compiled_kernels(FakeDriver& driver) {
  const auto kernels = by_name();
  for (const auto& [name, kernel] : kernels) kernel->register_on(driver, *kernel);
  return kernels.size();
}

std::vector<std::string> compiled_kernel_names() {
  std::vector<std::string> names;
  for (const auto& [name, kernel] : by_name()) names.emplace_back(name);
  return names;
}

std::vector<std::byte> compiled_kernels_image() {
  return internal::build_module_image(compiled_kernel_names());
}

namespace detail {

bool list_compiled_kernel(CompiledKernel& kernel) noexcept {
  const CompiledKernel* head = g_compiled.load(std::memory_order_relaxed);
  do {
    kernel.next = head;
  } while (!g_compiled.compare_exchange_weak(head, &kernel, std::memory_order_release,
                                             std::memory_order_relaxed));
  return true;
}

std::vector<std::string> param_names(std::string_view signature) {
  // "(ptr<const float> x, std::pair<int, int> p, unsigned n)": split at the commas outside
  // brackets, keep each part's last identifier.
  if (!signature.empty() && signature.front() == '(') signature.remove_prefix(1);
  if (!signature.empty() && signature.back() == ')') signature.remove_suffix(1);
  std::vector<std::string> names;
  auto last_identifier = [](std::string_view part) {
    auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::size_t end = part.size();
    while (end > 0 && !is_word(part[end - 1])) --end;
    std::size_t begin = end;
    while (begin > 0 && is_word(part[begin - 1])) --begin;
    return std::string(part.substr(begin, end - begin));
  };
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= signature.size(); ++i) {
    const char c = i < signature.size() ? signature[i] : ',';
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    if (c == '>' || c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth <= 0) {
      std::string_view part = signature.substr(start, i - start);
      if (part.find_first_not_of(" \t\n") != std::string_view::npos) {
        names.push_back(last_identifier(part));
      }
      start = i + 1;
    }
  }
  return names;
}

}  // namespace detail
}  // namespace graphcap::fake
