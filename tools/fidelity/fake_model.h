// The fake every graphcap-fidelity program runs on (the generator's model, the fake side of a
// comparison, a replay): a FakeDriver with the test kernels registered, and its module image.
#pragma once

#include <cstddef>
#include <vector>

#include <graphcap/fake/fake_driver.h>

#include "kernels/test_kernels.h"

namespace graphcap::fidelity {

// The fake's options for every program of the tool, in this one place. A GPU reports nothing of
// a race between writes no order separates (the harness classifies their bytes as racy instead),
// so the fake's race check is off: it would fail calls the H200 answered.
inline fake::FakeDriverOptions fake_options() {
  fake::FakeDriverOptions options;
  options.detect_races = false;
  return options;
}

struct FidelityFake {
  FidelityFake() : driver(fake_options()) {
    testing::register_test_kernels(driver);
    image = driver.module_image({"empty", "add_one", "fill", "axpy", "copy", "mixed", "affine",
                                 "countdown", "set_condition", "count_threads",
                                 "pdl_add_one"});  // kTestKernelNames: the GPU's fatbin has all
  }
  fake::FakeDriver driver;
  std::vector<std::byte> image;
};

}  // namespace graphcap::fidelity
