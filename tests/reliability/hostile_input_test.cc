// Hostile input at the API, beyond what tests/device and tests/capture already cover:
// each call gets a specific Errc, nothing crashes, and nothing changes that should not.
//   - Graphs: move-assigned over a live graph, self-moved, moved-from, destroyed, outliving their
//     device; ended from a thread that did not begin the recording.
//   - Objects of another device: streams in every lifecycle call, kernels of its modules, buffers
//     and kernels of a closed device used on a new one.
//   - Module images: a lone NUL, unterminated text, text with non-text bytes, ELF headers whose
//     tables overflow or point past the image, a 32-bit ELF, fatbin headers with impossible sizes,
//     a fake image naming a kernel the driver lacks; kernel names with a NUL or of 10000 bytes.
//   - Launches: shared memory past the limit, a block whose dimensions fit but whose product does
//     not, grids at and past the limits, 65 arguments. Against the kernel's signature:
//     a kernel of 64 parameters given 64 and 63, a 64-byte value or an empty buffer where a
//     4-byte scalar is expected, a kernel whose layout the driver can't report.
//   - Sizes whose arithmetic overflows: allocations near SIZE_MAX (also in an armed pool and inside
//     a recording), read and write ranges whose offset + count wraps around.
//   - Device::open with a negative or missing ordinal, or an unknown capture mode.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "matchers.h"
#include "undeclared_kernel.h"

namespace graphcap::testing {
namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

class HostileInputTest : public DeviceFixture {
 protected:
  void SetUp() override {
    DeviceFixture::SetUp();
    ASSERT_NE(fake(), nullptr);
  }

  Graph capture_add_one(const Buffer& x, std::uint32_t n) {
    EXPECT_THAT(device_->prepare_capture(stream()), IsOk());
    EXPECT_THAT(device_->begin_capture(stream()), IsOk());
    EXPECT_THAT(add_one(x, x, n), IsOk());
    Result<Graph> graph = device_->end_capture(stream());
    EXPECT_THAT(graph, IsOk());
    return graph ? std::move(*graph) : Graph{};
  }

  std::vector<std::byte> bytes_of(const std::string& text, bool terminate) {
    std::vector<std::byte> out(text.size() + (terminate ? 1 : 0), std::byte{0});
    std::memcpy(out.data(), text.data(), text.size());
    return out;
  }
};

// ---- graphs ----------------------------------------------------------------------------------------

TEST_F(HostileInputTest, MoveAssigningOverALiveGraphDestroysItOnce) {
  Buffer x = upload_u32({1, 2});
  Graph first = capture_add_one(x, 2);
  Graph second = capture_add_one(x, 2);
  ASSERT_EQ(fake()->live_handles().execs, 2u);
  first = std::move(second);  // the old executable goes, once
  EXPECT_EQ(fake()->live_handles().execs, 1u);
  EXPECT_EQ(fake()->call_count("cuGraphExecDestroy"), 1u);
  EXPECT_FALSE(second);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_THAT(second.replay(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("empty")));
  EXPECT_EQ(second.report().node_count, 0u);
  EXPECT_THAT(second.destroy(), IsOk());
  ASSERT_THAT(first.replay(), IsOk());
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{2, 3}));
  // Moving a graph onto itself keeps it.
  Graph& alias = first;
  first = std::move(alias);
  ASSERT_TRUE(first);
  ASSERT_THAT(first.replay(), IsOk());
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{3, 4}));
  EXPECT_EQ(fake()->live_handles().execs, 1u);
}

TEST_F(HostileInputTest, DestroyedGraphKeepsItsReportAndRefusesReplay) {
  Buffer x = upload_u32({1});
  Graph graph = capture_add_one(x, 1);
  ASSERT_THAT(graph.destroy(), IsOk());
  EXPECT_FALSE(graph);
  EXPECT_THAT(graph.replay(), StatusIs(Errc::graph_state));
  EXPECT_THAT(graph.destroy(), IsOk());
  EXPECT_EQ(fake()->live_handles().execs, 0u);
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{1}));
}

TEST_F(HostileInputTest, GraphOfAClosedDeviceStaysInertThroughEveryCall) {
  Buffer x = upload_u32({5});
  Graph graph = capture_add_one(x, 1);
  const std::size_t nodes = graph.report().node_count;
  Module module = module_;
  Kernel kernel = add_one_;
  device_.reset();
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(graph.replay(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("closed")));
  }
  EXPECT_EQ(graph.report().node_count, nodes);
  Graph moved = std::move(graph);
  EXPECT_THAT(moved.replay(), StatusIs(Errc::graph_state));
  EXPECT_THAT(moved.destroy(), IsOk());
  EXPECT_EQ(x.size(), 4u);
  EXPECT_FALSE(x.failure().has_value());
  // A buffer and a kernel of the closed device, handed to a new device on the same driver.
  Result<std::unique_ptr<Device>> fresh = Device::open(driver_->api());
  ASSERT_THAT(fresh, IsOk());
  Stream& s = (*fresh)->stream();
  EXPECT_THAT((*fresh)->read(x, s), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                             HasSubstr("another device")));
  EXPECT_THAT((*fresh)->write(x, to_bytes({1}), s), StatusIs(Errc::invalid_argument));
  Result<Buffer> mine = (*fresh)->alloc(4, s);
  ASSERT_THAT(mine, IsOk());
  const std::uint32_t n = 1;
  EXPECT_THAT((*fresh)->launch(s, kernel, dims_for(1), {Arg::in(*mine), Arg::out(*mine), Arg::value(n)}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("another device")));
  EXPECT_THAT(module.kernel("add_one"), StatusIs(Errc::graph_state));
}

TEST_F(HostileInputTest, EndingARecordingFromAnotherThreadIsRefusedAndChangesNothing) {
  Buffer x = upload_u32({1, 2, 3});
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 3), IsOk());
  Result<Graph> from_elsewhere = Error(Errc::driver, "not run");
  std::thread intruder([&] { from_elsewhere = device_->end_capture(stream()); });
  intruder.join();
  EXPECT_THAT(from_elsewhere,
              StatusIs(Errc::graph_state, CUDA_SUCCESS,
                       AllOf(HasSubstr("thread"), HasSubstr("abort_capture"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk()) << "the owner's recording must be intact";
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{2, 3, 4}));
}

// ---- objects of another device ------------------------------------------------------------------

TEST_F(HostileInputTest, StreamOfAnotherDeviceIsRefusedByEveryCall) {
  Result<std::unique_ptr<Device>> other = Device::open(driver_->api());
  ASSERT_THAT(other, IsOk());
  Stream& foreign = (*other)->stream();
  Buffer x = upload_u32({1});
  auto is_foreign = StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("another device"));
  EXPECT_THAT(device_->prepare_capture(foreign), is_foreign);
  EXPECT_THAT(device_->begin_capture(foreign), is_foreign);
  EXPECT_THAT(device_->end_capture(foreign), is_foreign);
  EXPECT_THAT(device_->abort_capture(foreign), is_foreign);
  EXPECT_THAT(device_->sync(foreign), is_foreign);
  EXPECT_THAT(device_->read(x, foreign), is_foreign);
  EXPECT_THAT(device_->write(x, to_bytes({2}), foreign), is_foreign);
  EXPECT_THAT(device_->upload(to_bytes({2}), foreign), is_foreign);
  EXPECT_THAT(device_->launch(foreign, fill_, dims_for(1), {Arg::out(x), Arg::value(1u), Arg::value(1u)}),
              is_foreign);
  EXPECT_EQ(foreign.capture_state(), CaptureState::no_capture);
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{1}));
}

TEST_F(HostileInputTest, KernelOfAnotherDevicesModuleIsRefused) {
  Result<std::unique_ptr<Device>> other = Device::open(driver_->api());
  ASSERT_THAT(other, IsOk());
  Result<Module> module = (*other)->load_module(driver_->kernel_image());
  ASSERT_THAT(module, IsOk());
  Result<Kernel> foreign = module->kernel("fill");
  ASSERT_THAT(foreign, IsOk());
  Buffer x = upload_u32({9});
  EXPECT_THAT(device_->launch(stream(), *foreign, dims_for(1), {Arg::out(x), Arg::value(1u), Arg::value(1u)}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("another device")));
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{9}));
}

// ---- module images and kernel names ---------------------------------------------------------------

TEST_F(HostileInputTest, MalformedModuleImagesAreRefusedBeforeTheDriver) {
  const std::size_t loads = fake()->call_count("cuModuleLoadData");
  auto refused = StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("load_module"));
  EXPECT_THAT(device_->load_module(std::vector<std::byte>{std::byte{0}}), refused);
  // Text with control bytes before its terminator, though it names a version.
  EXPECT_THAT(device_->load_module(bytes_of(".version 8.0\n\x01\x02garbage", true)), refused);
  // ELF64 whose program header table lies past the image, or whose offset would overflow.
  std::vector<std::byte> elf(64, std::byte{0});
  const unsigned char magic[] = {0x7F, 'E', 'L', 'F', 2};
  std::memcpy(elf.data(), magic, sizeof(magic));
  auto put64 = [&](std::size_t at, std::uint64_t v) { std::memcpy(elf.data() + at, &v, 8); };
  auto put16 = [&](std::size_t at, std::uint16_t v) { std::memcpy(elf.data() + at, &v, 2); };
  put64(0x20, 64);
  put16(0x36, 56);
  put16(0x38, 3);  // three 56-byte entries at 64: past a 64-byte image
  EXPECT_THAT(device_->load_module(elf), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                                  HasSubstr("truncated ELF")));
  put64(0x20, std::numeric_limits<std::uint64_t>::max() - 8);  // offset + size wraps
  EXPECT_THAT(device_->load_module(elf), refused);
  put64(0x20, 0);
  put16(0x38, 0);
  put64(0x28, 16);  // section headers overlapping the end
  put16(0x3A, 64);
  put16(0x3C, 65535);
  EXPECT_THAT(device_->load_module(elf), refused);
  elf[4] = std::byte{1};  // ELFCLASS32
  EXPECT_THAT(device_->load_module(elf), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                                  HasSubstr("64-bit")));
  // Fatbin headers with impossible sizes.
  std::vector<std::byte> fatbin(16, std::byte{0});
  const std::uint32_t fatbin_magic = 0xBA55ED50u;
  std::memcpy(fatbin.data(), &fatbin_magic, 4);
  const std::uint16_t small_header = 8;
  std::memcpy(fatbin.data() + 6, &small_header, 2);
  EXPECT_THAT(device_->load_module(fatbin), refused);
  const std::uint16_t header = 16;
  const std::uint64_t huge_body = std::numeric_limits<std::uint64_t>::max();
  std::memcpy(fatbin.data() + 6, &header, 2);
  std::memcpy(fatbin.data() + 8, &huge_body, 8);
  EXPECT_THAT(device_->load_module(fatbin), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                                     HasSubstr("truncated fatbin")));
  EXPECT_EQ(fake()->call_count("cuModuleLoadData"), loads) << "none of these reached the driver";
}

TEST_F(HostileInputTest, WellFormedButWrongImagesAreTheDriversRefusal) {
  // Unterminated text: graphcap hands the driver a terminated copy; the driver rejects its content.
  EXPECT_THAT(device_->load_module(bytes_of(".version 8.0\n.target sm_90\n", false)),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_IMAGE, HasSubstr("cuModuleLoadData")));
  // A fake image naming a kernel the fake driver has no body for.
  EXPECT_THAT(device_->load_module(fake()->module_image({"add_one", "no_such_body"})),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_IMAGE, HasSubstr("cuModuleLoadData")));
  // Unterminated but otherwise valid: loads.
  std::vector<std::byte> image = fake()->module_image({"fill"});
  ASSERT_EQ(image.back(), std::byte{0});
  image.pop_back();
  Result<Module> module = device_->load_module(image);
  ASSERT_THAT(module, IsOk());
  EXPECT_THAT(module->kernel("fill"), IsOk());
}

TEST_F(HostileInputTest, KernelNamesWithANulOrAbsurdLengthAreRefused) {
  EXPECT_THAT(module_.kernel(std::string_view("add_one\0x", 9)),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("not a valid kernel name")));
  EXPECT_THAT(module_.kernel(std::string(10000, 'k')),
              StatusIs(Errc::invalid_argument, CUDA_ERROR_NOT_FOUND));
}

// ---- launches ----------------------------------------------------------------------------------------

template <std::size_t... I>
Result<void> launch_with_args(Device& device, Stream& s, const Kernel& kernel,
                              std::index_sequence<I...>) {
  return device.launch(s, kernel, dims_for(1), {Arg::value(static_cast<std::uint32_t>(I))...});
}

TEST_F(HostileInputTest, LaunchShapesAtAndPastTheLimits) {
  // The test kernels are GRAPHCAP_KERNELs, run once per thread on the fake: a launch at the grid
  // limits (2^41 threads) would never end there. What is checked here is graphcap's check of the
  // shape, so a fill body registered by hand (run once per launch) takes the launches.
  fake()->register_typed_kernel<CUdeviceptr, std::uint32_t, std::uint32_t>(
      "fill_once", [](fake::KernelContext& k) {
        for (std::uint32_t& e : k.buffer<std::uint32_t>(0, k.value<std::uint32_t>(2))) {
          e = k.value<std::uint32_t>(1);
        }
      });
  Result<Module> module = device_->load_module(fake()->module_image({"fill_once"}));
  ASSERT_THAT(module, IsOk());
  Result<Kernel> fill_once = module->kernel("fill_once");
  ASSERT_THAT(fill_once, IsOk());
  Buffer x = upload_u32({1});
  const DeviceLimits& limits = device_->limits();
  auto fill_with = [&](LaunchDims dims) {
    return device_->launch(stream(), *fill_once, dims,
                           {Arg::out(x), Arg::value(7u), Arg::value(1u)});
  };
  auto exceeds = StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("exceed"));
  LaunchDims dims;
  dims.shared_bytes = limits.max_shared_bytes + 1;
  EXPECT_THAT(fill_with(dims), exceeds);
  dims = LaunchDims{};
  dims.block = {32, 32, 2};  // every dimension within its limit, 2048 threads in all
  EXPECT_THAT(fill_with(dims), exceeds);
  dims = LaunchDims{};
  dims.block = {limits.max_block.x, limits.max_block.y, limits.max_block.z};  // product overflows 2^32? no: checked in 64 bits
  EXPECT_THAT(fill_with(dims), exceeds);
  dims = LaunchDims{};
  dims.grid = {limits.max_grid.x, limits.max_grid.y + 1, 1};
  EXPECT_THAT(fill_with(dims), exceeds);
  dims = LaunchDims{};
  dims.grid.z = std::numeric_limits<unsigned>::max();
  EXPECT_THAT(fill_with(dims), exceeds);
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{1})) << "nothing ran";
  // Exactly at the limits is a launch.
  dims = LaunchDims{};
  dims.grid = {limits.max_grid.x, 1, 1};
  dims.block = {limits.max_threads_per_block, 1, 1};
  EXPECT_THAT(fill_with(dims), IsOk());
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{7}));
  // 65 arguments: more than a launch packs.
  EXPECT_THAT(launch_with_args(*device_, stream(), empty_, std::make_index_sequence<65>{}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("65 arguments")));
}

TEST_F(HostileInputTest, LaunchArgumentsAgainstTheSignatureAtItsEdges) {
  std::vector<std::string> warnings;
  LogSink previous = set_log_sink([&](LogLevel level, std::string_view message) {
    if (level <= LogLevel::warn) warnings.emplace_back(message);
  });
  // A kernel of 64 parameters, as many as a launch packs: 64 arguments fit, 63 leave the last
  // one missing, named.
  fake()->register_kernel("wide", std::vector<std::size_t>(64, 4), [](fake::KernelContext&) {});
  register_undeclared_kernel(*fake(), "undeclared", [](fake::KernelContext&) {});
  Result<Module> module = device_->load_module(fake()->module_image({"wide", "undeclared"}));
  ASSERT_THAT(module, IsOk());
  Result<Kernel> wide = module->kernel("wide");
  ASSERT_THAT(wide, IsOk());
  EXPECT_EQ(wide->param_count(), 64u);
  EXPECT_THAT(launch_with_args(*device_, stream(), *wide, std::make_index_sequence<64>{}), IsOk());
  EXPECT_THAT(launch_with_args(*device_, stream(), *wide, std::make_index_sequence<63>{}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("wide"), HasSubstr("parameter 63"))));
  EXPECT_THAT(launch_with_args(*device_, stream(), *wide, std::make_index_sequence<65>{}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("65 arguments")));

  // The largest value an Arg holds, and an empty buffer, where fill takes a 4-byte scalar: the
  // signature refuses them before anything looks at the buffer.
  struct Largest {
    unsigned char bytes[Arg::kMaxValueBytes];
  };
  Buffer x = upload_u32({1});
  EXPECT_THAT(device_->launch(stream(), fill_, dims_for(1),
                              {Arg::out(x), Arg::value(Largest{}), Arg::value(1u)}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("parameter 1"), HasSubstr("given 64"))));
  EXPECT_THAT(device_->launch(stream(), fill_, dims_for(1),
                              {Arg::out(x), Arg::in(Buffer{}), Arg::value(1u)}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("parameter 1"), HasSubstr("a buffer"))));
  EXPECT_FALSE(x.failure().has_value());
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{1})) << "nothing ran";

  // A kernel whose layout the driver can't report (the fake's kernel registered without one
  // answers CUDA_ERROR_NOT_SUPPORTED): found, said once, launched unchecked, and the fake
  // refuses the launch itself.
  Result<Kernel> undeclared = module->kernel("undeclared");
  ASSERT_THAT(undeclared, IsOk());
  EXPECT_FALSE(undeclared->has_param_layout());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], AllOf(HasSubstr("undeclared"), HasSubstr("CUDA_ERROR_NOT_SUPPORTED")));
  EXPECT_THAT(device_->launch(stream(), *undeclared, dims_for(1), {Arg::value(1u)}),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE, HasSubstr("cuLaunchKernel")));
  EXPECT_EQ(fake()->violations().size(), 1u);
  fake()->clear_violations();
  set_log_sink(previous);
}

// ---- sizes whose arithmetic overflows ----------------------------------------------------------------

TEST_F(HostileInputTest, AllocationSizesNearTheTopOfSizeT) {
  EXPECT_THAT(device_->alloc(kMax - 255, stream()), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->alloc(kMax - (std::size_t{1} << 60), stream()),
              StatusIs(Errc::invalid_argument));  // its size class overflows
  // Representable sizes past the device: the driver's refusal.
  EXPECT_THAT(device_->alloc(kMax / 2 + 2, stream()),
              StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY, HasSubstr("cuMemAlloc")));
  EXPECT_THAT(device_->alloc(std::size_t{1} << 62, stream()),
              StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY, HasSubstr("cuMemAlloc")));
  EXPECT_THAT(device_->upload({}, stream()), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                                      HasSubstr("zero bytes")));
  // In an armed pool (exact-fit sizes) and inside a recording, too.
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THAT(device_->alloc(kMax - 10, stream()), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->alloc(kMax, stream()), StatusIs(Errc::invalid_argument));
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(device_->alloc(kMax - 10, stream()), StatusIs(Errc::invalid_argument));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  Result<Buffer> fine = device_->alloc(64, stream());
  EXPECT_THAT(fine, IsOk());
}

TEST_F(HostileInputTest, ReadAndWriteRangesWhoseEndWrapsAround) {
  Buffer x = upload_u32({1, 2, 3, 4});  // 16 bytes
  auto outside = StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("outside the buffer"));
  EXPECT_THAT(device_->read(x, 8, kMax - 7, stream()), outside);  // 8 + (2^64 - 8) wraps to 0
  EXPECT_THAT(device_->read(x, kMax, 1, stream()), outside);
  EXPECT_THAT(device_->read(x, 1, kMax, stream()), outside);
  EXPECT_THAT(device_->write(x, kMax, std::span<const std::byte>{}, stream()), outside);
  EXPECT_THAT(device_->write(x, 17, std::span<const std::byte>{}, stream()), outside);
  const std::vector<std::byte> four = to_bytes({9});
  EXPECT_THAT(device_->write(x, kMax - 2, four, stream()), outside);  // kMax - 2 + 4 wraps to 1
  // The boundaries themselves are fine.
  Result<std::vector<std::byte>> empty = device_->read(x, 16, 0, stream());
  ASSERT_THAT(empty, IsOk());
  EXPECT_TRUE(empty->empty());
  EXPECT_THAT(device_->write(x, 16, std::span<const std::byte>{}, stream()), IsOk());
  EXPECT_THAT(device_->write(x, 12, four, stream()), IsOk());
  EXPECT_EQ(read_u32(x), (std::vector<std::uint32_t>{1, 2, 3, 9}));
}

// ---- opening ---------------------------------------------------------------------------------------

TEST_F(HostileInputTest, OpenWithImpossibleOptionsIsInvalidArgument) {
  DeviceOptions negative;
  negative.ordinal = -1;
  EXPECT_THAT(Device::open(driver_->api(), negative), StatusIs(Errc::invalid_argument));
  DeviceOptions missing;
  missing.ordinal = 7;
  EXPECT_THAT(Device::open(driver_->api(), missing),
              StatusIs(Errc::invalid_argument, CUDA_ERROR_INVALID_DEVICE, HasSubstr("ordinal 7")));
  DeviceOptions mode;
  mode.capture_mode = static_cast<CUstreamCaptureMode>(42);
  EXPECT_THAT(Device::open(driver_->api(), mode),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("capture mode")));
}

}  // namespace
}  // namespace graphcap::testing
