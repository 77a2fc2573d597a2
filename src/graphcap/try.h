// GRAPHCAP_TRY: return the error of a failed Result from the enclosing function. Internal only.
#pragma once

#define GRAPHCAP_CONCAT_INNER(a, b) a##b
#define GRAPHCAP_CONCAT(a, b) GRAPHCAP_CONCAT_INNER(a, b)

// GRAPHCAP_TRY(expr): expr is a Result; on failure, return its error. The failure is the
// unlikely branch: its code is laid out away from the path that succeeds (issue 24).
#define GRAPHCAP_TRY(expr)                                     \
  do {                                                         \
    auto&& graphcap_try_result_ = (expr);                      \
    if (!graphcap_try_result_) [[unlikely]] {                  \
      return std::move(graphcap_try_result_).error();          \
    }                                                          \
  } while (false)

// GRAPHCAP_ASSIGN_OR_RETURN(lhs, expr): lhs = *expr, or return expr's error.
#define GRAPHCAP_ASSIGN_OR_RETURN(lhs, expr) \
  GRAPHCAP_ASSIGN_OR_RETURN_IMPL(GRAPHCAP_CONCAT(graphcap_result_, __LINE__), lhs, expr)
#define GRAPHCAP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp) [[unlikely]] return std::move(tmp).error(); \
  lhs = std::move(tmp).value()
