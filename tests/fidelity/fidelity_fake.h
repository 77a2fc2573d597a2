// A fake driver with the test kernels registered and its module image: what graphcap-fidelity's
// tests run programs on.
#pragma once

#include <cstddef>
#include <vector>

#include <graphcap/fake/fake_driver.h>

#include "kernels/test_kernels.h"

namespace graphcap::fidelity {

struct FidelityFake {
  FidelityFake() {
    testing::register_test_kernels(driver);
    image = driver.module_image({"empty", "add_one", "fill", "axpy", "copy", "mixed", "affine",
                                 "countdown", "set_condition", "count_threads",
                                 "pdl_add_one"});  // kTestKernelNames: the GPU's fatbin has all
  }
  fake::FakeDriver driver;
  std::vector<std::byte> image;
};

}  // namespace graphcap::fidelity
