// GRAPHCAP_TRY and GRAPHCAP_ASSIGN_OR_RETURN: propagate the error of a failed Result<T> from the
// enclosing function, which returns a Result of any type (an Error converts to each). Installed
// (graphcap.h includes it); graphcap uses them itself.
//
//   Result<void> step() {
//     GRAPHCAP_TRY(device.launch(s, scale, dims, {Arg::in(x), Arg::out(y), Arg::value(n)}));
//     GRAPHCAP_TRY(device.launch(s, add, dims, {Arg::in(x), Arg::inout(y), Arg::value(n)}));
//     return {};
//   }
//   Result<float> last(Buffer& y) {
//     std::vector<std::byte> bytes;
//     GRAPHCAP_ASSIGN_OR_RETURN(bytes, device.read(y, s));  // bytes = *read, or return its error
//     return reinterpret_cast<const float*>(bytes.data())[bytes.size() / sizeof(float) - 1];
//   }
#pragma once

#include <utility>

#define GRAPHCAP_CONCAT_INNER(a, b) a##b
#define GRAPHCAP_CONCAT(a, b) GRAPHCAP_CONCAT_INNER(a, b)

// GRAPHCAP_TRY(expr): expr is a Result; on failure, return its error. The failure is the
// unlikely branch: its code is laid out away from the path that succeeds.
#define GRAPHCAP_TRY(expr)                                     \
  do {                                                         \
    auto&& graphcap_try_result_ = (expr);                      \
    if (!graphcap_try_result_) [[unlikely]] {                  \
      return std::move(graphcap_try_result_).error();          \
    }                                                          \
  } while (false)

// GRAPHCAP_ASSIGN_OR_RETURN(lhs, expr): lhs = *expr, or return expr's error. `lhs` may declare
// (`GRAPHCAP_ASSIGN_OR_RETURN(Buffer b, device.alloc(n, s))`); one per line (it names a temporary
// after the line).
#define GRAPHCAP_ASSIGN_OR_RETURN(lhs, expr) \
  GRAPHCAP_ASSIGN_OR_RETURN_IMPL(GRAPHCAP_CONCAT(graphcap_result_, __LINE__), lhs, expr)
#define GRAPHCAP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp) [[unlikely]] return std::move(tmp).error(); \
  lhs = std::move(tmp).value()
