// MockDriver: a gMock DriverApi whose every method delegates to an owned FakeDriver by default
// (gMock's "delegating calls to a fake"), so a test sets expectations on the calls it cares about
// and the fake answers all of them:
//
//   ::testing::NiceMock<graphcap::fake::MockDriver> mock;
//   EXPECT_CALL(mock, cuGraphDestroy(::testing::_)).Times(1);
//   ... drive graphcap through `mock` (a DriverApi&) ...
//   mock.fake().live_handles();
//
// Header-only: include it only where gMock is linked. Its constructor and destructor are most of
// a test file's compile time (about 35 s each on one core, for ~60 methods); a build that defines
// GRAPHCAP_MOCK_DRIVER_OUT_OF_LINE compiles them once, in mock_driver.cc (as the gMock cookbook's
// "Making the Compilation Faster" advises). graphcap's own tests do; installed users need not.
#pragma once

#include <cstddef>

#include <gmock/gmock.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/fake/fake_driver.h>

namespace graphcap::fake {

class MockDriver : public DriverApi {
 public:
  explicit MockDriver(FakeDriverOptions options = {});
  ~MockDriver() override;

  // The fake every call goes to unless a test says otherwise.
  FakeDriver& fake() noexcept { return fake_; }
  const FakeDriver& fake() const noexcept { return fake_; }

  MOCK_METHOD(const char*, name, (), (const, noexcept, override));
  // Not mocked: the fake's account, from its call log.
  std::string capture_invalidation(CUstream stream) override {
    return fake_.capture_invalidation(stream);
  }
  // Not mocked either: the fake's account of a fault, and graphcap's annotations of its Buffers.
  std::string stream_fault(CUstream stream) override { return fake_.stream_fault(stream); }
  void annotate_buffer(CUdeviceptr address, std::size_t bytes) noexcept override {
    fake_.annotate_buffer(address, bytes);
  }

  // One mock method per line of entry_points.def.
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  MOCK_METHOD(CUresult, name, (GRAPHCAP_PARAM_TYPES(params)), (override));
#include <graphcap/driver/entry_points.def>

 private:
  void delegate_to_fake();

  FakeDriver fake_;
};

// Inline here, unless the build compiles them once in mock_driver.cc (which defines _DEFINE).
#if !defined(GRAPHCAP_MOCK_DRIVER_OUT_OF_LINE) || defined(GRAPHCAP_MOCK_DRIVER_DEFINE)
#if defined(GRAPHCAP_MOCK_DRIVER_DEFINE)
#define GRAPHCAP_MOCK_DRIVER_INLINE
#else
#define GRAPHCAP_MOCK_DRIVER_INLINE inline
#endif

GRAPHCAP_MOCK_DRIVER_INLINE MockDriver::MockDriver(FakeDriverOptions options) : fake_(options) {
  delegate_to_fake();
}

GRAPHCAP_MOCK_DRIVER_INLINE MockDriver::~MockDriver() = default;

GRAPHCAP_MOCK_DRIVER_INLINE void MockDriver::delegate_to_fake() {
  using ::testing::Invoke;
  ON_CALL(*this, name()).WillByDefault([this]() { return fake_.name(); });
  // Every entry point: the owned fake's method of the same name.
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  ON_CALL(*this, name).WillByDefault(Invoke(&fake_, &FakeDriver::name));
#include <graphcap/driver/entry_points.def>
}

#undef GRAPHCAP_MOCK_DRIVER_INLINE
#endif

}  // namespace graphcap::fake

// The wrappers tests use, instantiated once too in such a build. A NiceMock<MockDriver> or
// StrictMock<MockDriver> instantiated in a test file emits its vtable there, and with it every
// inline mock method (gMock's whole call machinery for each entry point): 30-50 s of compile a
// test file under CI's sanitizers for a 100-line test (reliability.md "CI").
#if defined(GRAPHCAP_MOCK_DRIVER_OUT_OF_LINE)
#if defined(GRAPHCAP_MOCK_DRIVER_DEFINE)
template class ::testing::NiceMock<graphcap::fake::MockDriver>;
template class ::testing::StrictMock<graphcap::fake::MockDriver>;
template class ::testing::NaggyMock<graphcap::fake::MockDriver>;
#else
extern template class ::testing::NiceMock<graphcap::fake::MockDriver>;
extern template class ::testing::StrictMock<graphcap::fake::MockDriver>;
extern template class ::testing::NaggyMock<graphcap::fake::MockDriver>;
#endif
#endif
