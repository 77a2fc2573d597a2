// A Device and its FakeDriver as static objects, closed while the program exits: the close path
// reads per-thread state (graphcap's capture tracker, the fake's current context) after
// thread_local containers of the main thread may already be gone. Under the asan preset a
// use-after-free there aborts this program; ctest runs it (unit.StaticDeviceClosesAtExit).
#include <cstdio>
#include <memory>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>

namespace {
graphcap::fake::FakeDriver driver;  // constructed first, destroyed last
std::unique_ptr<graphcap::Device> device;
graphcap::Graph graph;
}  // namespace

int main() {
  auto opened = graphcap::Device::open(driver);
  if (!opened) {
    std::fprintf(stderr, "%s\n", opened.error().message().c_str());
    return 1;
  }
  device = std::move(*opened);
  graphcap::Stream& s = device->stream();
  if (!device->prepare_capture(s) || !device->begin_capture(s)) return 1;
  auto captured = device->end_capture(s);
  if (!captured) return 1;
  graph = std::move(*captured);
  if (!graph.replay()) return 1;
  return 0;  // graph, device and driver are destroyed after main returns
}
