// Uses the installed headers (the umbrella among them) and both exported libraries: a FakeDriver
// (graphcap::fake) driven through DriverApi, and graphcap's own error naming (graphcap::graphcap).
#include <cstdio>

#include <graphcap/graphcap.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/error_names.h>
#include <graphcap/fake/fake_driver.h>

int main() {
  graphcap::fake::FakeDriver fake;
  graphcap::DriverApi& driver = fake;
  const graphcap::CUresult result = driver.cuInit(0);
  std::printf("cuInit through DriverApi (%s): %s\n", driver.name(),
              graphcap::describe_cu_result(result).c_str());
  return result == graphcap::CUDA_SUCCESS ? 0 : 1;
}
