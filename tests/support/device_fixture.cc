#include "device_fixture.h"

#include <cstring>

#include <graphcap/fake/fake_driver.h>

#include "matchers.h"

namespace graphcap::testing {

std::vector<std::byte> to_bytes(const std::vector<std::uint32_t>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(std::uint32_t));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<std::uint32_t> to_u32(const std::vector<std::byte>& bytes) {
  std::vector<std::uint32_t> values(bytes.size() / sizeof(std::uint32_t));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(std::uint32_t));
  return values;
}

std::string without_call_sites(std::string dot) {
  const std::string line = "\\nat ";  // as DOT escapes a label's line break
  for (std::size_t end = dot.find("\"]"); end != std::string::npos; end = dot.find("\"]", end + 2)) {
    const std::size_t at = dot.rfind(line, end);
    if (at == std::string::npos) continue;
    const std::string site = dot.substr(at + line.size(), end - at - line.size());
    const std::size_t colon = site.rfind(':');
    if (site.find("\\n") != std::string::npos || colon == std::string::npos ||
        colon + 1 == site.size() ||
        site.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      continue;
    }
    dot.erase(at, end - at);
    end = at;
  }
  return dot;
}

LaunchDims dims_for(std::size_t elements) {
  LaunchDims dims;
  dims.block.x = 256;
  dims.grid.x = static_cast<unsigned>((elements + 255) / 256);
  if (dims.grid.x == 0) dims.grid.x = 1;
  return dims;
}

std::vector<std::uint32_t> iota_u32(std::size_t n, std::uint32_t offset) {
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<std::uint32_t>(i) + offset;
  return values;
}

void DeviceFixture::SetUp() {
  driver_ = make_test_driver();
  ASSERT_NE(driver_, nullptr);
  Result<std::unique_ptr<Device>> device = Device::open(device_driver(driver_->api()), device_options());
  ASSERT_THAT(device, IsOk());
  device_ = std::move(*device);
  Result<Module> module = device_->load_module(driver_->kernel_image());
  ASSERT_THAT(module, IsOk());
  module_ = *module;
  for (auto [kernel, name] : {std::pair{&empty_, "empty"}, std::pair{&add_one_, "add_one"},
                              std::pair{&fill_, "fill"}, std::pair{&axpy_, "axpy"},
                              std::pair{&copy_, "copy"}}) {
    Result<Kernel> found = module_.kernel(name);
    ASSERT_THAT(found, IsOk()) << name;
    *kernel = *found;
  }
}

void DeviceFixture::TearDown() {
  streams_left_ = device_ ? device_->streams_left_to_driver() : 0;
  device_.reset();
  if (fake::FakeDriver* f = fake(); f != nullptr && expect_clean_teardown_) {
    // A stream left to the driver stays, and the device keeps its primary context with it (the
    // context's end would destroy the stream, which crashes the driver).
    fake::LiveHandles left;
    left.streams = streams_left_;
    left.contexts = streams_left_ != 0 ? 1 : 0;
    EXPECT_EQ(f->live_handles(), left) << "the device leaked driver handles";
    EXPECT_EQ(f->reclaimed_handles(), 0u) << "handles were still alive when the context went";
  }
  if (fake::FakeDriver* f = fake()) {
    EXPECT_THAT(f->violations(), ::testing::IsEmpty());
  }
}

Buffer DeviceFixture::upload_u32(const std::vector<std::uint32_t>& values) {
  return upload_u32(values, stream());
}

Buffer DeviceFixture::upload_u32(const std::vector<std::uint32_t>& values, Stream& s) {
  Result<Buffer> buffer = device_->upload(to_bytes(values), s);
  EXPECT_THAT(buffer, IsOk());
  return buffer ? *buffer : Buffer{};
}

std::vector<std::uint32_t> DeviceFixture::read_u32(const Buffer& buffer) {
  return read_u32(buffer, stream());
}

std::vector<std::uint32_t> DeviceFixture::read_u32(const Buffer& buffer, Stream& s) {
  Result<std::vector<std::byte>> bytes = device_->read(buffer, s);
  EXPECT_THAT(bytes, IsOk());
  return bytes ? to_u32(*bytes) : std::vector<std::uint32_t>{};
}

Stream* DeviceFixture::add_stream() {
  Result<Stream*> created = device_->create_stream();
  EXPECT_THAT(created, IsOk());
  return created ? *created : nullptr;
}

Event DeviceFixture::new_event() {
  Result<Event> event = device_->create_event();
  EXPECT_THAT(event, IsOk());
  return event ? std::move(*event) : Event{};
}

Result<void> DeviceFixture::add_one(const Buffer& src, const Buffer& dst, std::uint32_t n) {
  return add_one(src, dst, n, stream());
}

Result<void> DeviceFixture::add_one(const Buffer& src, const Buffer& dst, std::uint32_t n,
                                    Stream& s) {
  return device_->launch(s, add_one_, dims_for(n), {Arg::in(src), Arg::out(dst), Arg::value(n)});
}

Result<void> DeviceFixture::fill(const Buffer& dst, std::uint32_t value, std::uint32_t n) {
  return device_->launch(stream(), fill_, dims_for(n),
                         {Arg::out(dst), Arg::value(value), Arg::value(n)});
}

}  // namespace graphcap::testing
