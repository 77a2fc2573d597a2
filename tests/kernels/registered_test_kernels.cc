// register_test_kernels: the test kernels are GRAPHCAP_KERNELs (tests/kernels/test_kernels.cu),
// registered by register_compiled_kernels. They live in a static library that nothing references
// by name, so they are there only because graphcap_fake_kernels links it whole: a missing one
// says that broke, here, rather than as a module that fails to load.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <graphcap/fake/fake_driver.h>

#include "kernels/test_kernels.h"

namespace graphcap::testing {

void register_test_kernels(fake::FakeDriver& driver) {
  fake::register_compiled_kernels(driver);
  const std::vector<std::string> linked = fake::compiled_kernel_names();
  for (const char* name : kTestKernelNames) {
    bool found = false;
    for (const std::string& kernel : linked) found = found || kernel == name;
    if (!found) {
      std::fprintf(stderr,
                   "register_test_kernels: the test kernel '%s' is not linked into this program "
                   "(its static library was dead-stripped: link it through graphcap_fake_kernels)\n",
                   name);
      std::abort();
    }
  }
}

}  // namespace graphcap::testing
