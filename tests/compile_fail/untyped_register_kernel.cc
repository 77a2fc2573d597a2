// Must not compile quietly: a kernel registered without its parameter layout can never launch.
#include <graphcap/fake/fake_driver.h>

void register_it(graphcap::fake::FakeDriver& driver) {
  driver.register_kernel("opaque", [](graphcap::fake::KernelContext&) {});
}
