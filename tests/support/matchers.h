// gMock matchers for Result and Error, in the manner of abseil's StatusIs:
//   EXPECT_THAT(device.read(buffer, stream), IsOk());
//   EXPECT_THAT(window.begin(), StatusIs(Errc::graph_state));
//   EXPECT_THAT(graph.replay(), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE));
//   EXPECT_THAT(result, StatusIs(Errc::doomed, _, HasSubstr("cuLaunchKernel")));
#pragma once

#include <ostream>
#include <string>

#include <gmock/gmock.h>
#include <graphcap/error.h>
#include <graphcap/result.h>

namespace graphcap {

// The gMock matchers the suites name most, by their short names in every test namespace.
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

inline void PrintTo(Errc code, std::ostream* os) { *os << to_string(code); }
inline void PrintTo(const Error& error, std::ostream* os) {
  *os << to_string(error) << " [driver code " << static_cast<int>(error.driver_code()) << "]";
}
template <class T>
void PrintTo(const Result<T>& result, std::ostream* os) {
  if (result) {
    *os << "ok";
  } else {
    PrintTo(result.error(), os);
  }
}

namespace testing_internal {
template <class T>
const Error* error_of(const Result<T>& result) { return result ? nullptr : &result.error(); }
inline const Error* error_of(const Error& error) { return &error; }
}  // namespace testing_internal

MATCHER(IsOk, "succeeds") {
  if (arg.has_value()) return true;
  *result_listener << "failed with " << to_string(arg.error());
  return false;
}

// StatusIs(code), StatusIs(code, driver_code), StatusIs(code, driver_code, message_matcher).
// driver_code and message accept matchers (::testing::_ for any).
MATCHER_P3(StatusIsImpl, code, driver_code, message, "") {
  const Error* error = testing_internal::error_of(arg);
  if (error == nullptr) {
    *result_listener << "succeeded";
    return false;
  }
  *result_listener << "failed with " << to_string(*error) << " [driver code "
                   << static_cast<int>(error->driver_code()) << "]";
  return error->code() == code &&
         ::testing::SafeMatcherCast<CUresult>(driver_code).Matches(error->driver_code()) &&
         ::testing::SafeMatcherCast<const std::string&>(message).Matches(error->message());
}

inline auto StatusIs(Errc code) { return StatusIsImpl(code, ::testing::_, ::testing::_); }
template <class D>
auto StatusIs(Errc code, D driver_code) {
  return StatusIsImpl(code, ::testing::Matcher<CUresult>(driver_code), ::testing::_);
}
template <class D, class M>
auto StatusIs(Errc code, D driver_code, M message) {
  return StatusIsImpl(code, ::testing::Matcher<CUresult>(driver_code),
                      ::testing::Matcher<const std::string&>(message));
}

}  // namespace graphcap
