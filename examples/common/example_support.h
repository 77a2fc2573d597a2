// What the examples share: stopping with a message (fail, check, run_main), and the driver they
// run on with decode_loop's kernels (embed, mix, axpy, copy, next_token, written once in
// decode_kernels.cu): the fake with the kernels compiled for it (register_compiled_kernels), or
// libcuda with the fatbin nvcc built from the same source (GPU builds: EXAMPLE_DECODE_CUDA_KERNELS,
// set by examples/CMakeLists.txt's decode_kernels target).
#pragma once

#include <cstdio>
#include <cstddef>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>

#include "decode_kernels.h"

#if EXAMPLE_DECODE_CUDA_KERNELS
#include <graphcap/embedded/decode_loop_kernels_fatbin.h>
#endif

namespace example {

// A failure: what the program was doing, and why. Printed once, by run_main.
struct Failure {
  std::string message;
};

[[noreturn]] inline void fail(const std::string& message) { throw Failure{message}; }

template <class T>
T check(graphcap::Result<T> result, const char* what) {
  if (!result) fail(std::string(what) + ": " + graphcap::to_string(result.error()));
  return std::move(result).value();
}

inline void check(graphcap::Result<void> result, const char* what) {
  if (!result) fail(std::string(what) + ": " + graphcap::to_string(result.error()));
}

// main's body: its exit status, or "<program>: <why>" on stderr and 1 when it failed.
template <class Body>
int run_main(const char* program, Body&& body) {
  try {
    return std::forward<Body>(body)();
  } catch (const Failure& failure) {
    std::fprintf(stderr, "%s: %s\n", program, failure.message.c_str());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.what());
    return 1;
  }
}

// The driver an example runs on, holding decode_loop's kernels.
class DecodeDriver {
 public:
  // The fake (cuda false) or libcuda; `program` names the example in the error of a build that
  // holds no CUDA kernels.
  DecodeDriver(bool cuda, std::string_view program) {
    if (!cuda) {
      graphcap::fake::FakeDriverOptions fake_options;
      fake_options.record_calls = false;
      fake_ = std::make_unique<graphcap::fake::FakeDriver>(fake_options);
      graphcap::fake::register_compiled_kernels(*fake_);
      image_ = fake_->module_image({"embed", "mix", "axpy", "copy", "next_token", "decide"});
      return;
    }
#if EXAMPLE_DECODE_CUDA_KERNELS
    (void)program;  // named only in the error of a build without CUDA kernels
    cuda_ = check(graphcap::load_cuda_driver(), "--driver=cuda");
#else
    fail("--driver=cuda: this " + std::string(program) +
         " was built without GRAPHCAP_GPU, so it holds no CUDA kernels; configure with "
         "-DGRAPHCAP_GPU=ON (the gpu preset) and run it on a GPU");
#endif
  }
  DecodeDriver(const DecodeDriver&) = delete;
  DecodeDriver& operator=(const DecodeDriver&) = delete;

  graphcap::DriverApi& api() { return fake_ ? static_cast<graphcap::DriverApi&>(*fake_) : *cuda_; }
  // The fake (for its checks, e.g. violations()), or nullptr on libcuda.
  graphcap::fake::FakeDriver* fake() { return fake_.get(); }
  // The module image of the kernels, for Device::load_module.
  std::span<const std::byte> image() const {
#if EXAMPLE_DECODE_CUDA_KERNELS
    if (!fake_) return graphcap::embedded::decode_loop_kernels_fatbin();
#endif
    return image_;
  }

 private:
  std::unique_ptr<graphcap::fake::FakeDriver> fake_;
  std::unique_ptr<graphcap::DriverApi> cuda_;
  std::vector<std::byte> image_;  // the fake's
};

}  // namespace example
