// For the tests that study a kernel registered without a parameter layout: the deprecated
// FakeDriver::register_kernel(name, body), called in this one place with its warning silenced
// (the project builds with -Werror; the deprecation is what keeps it out of everyone else's code).
#pragma once

#include <string>
#include <utility>

#include <graphcap/fake/fake_driver.h>

namespace graphcap::testing {

inline void register_undeclared_kernel(fake::FakeDriver& driver, std::string name,
                                       fake::KernelBody body) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  driver.register_kernel(std::move(name), std::move(body));
#pragma GCC diagnostic pop
}

}  // namespace graphcap::testing
