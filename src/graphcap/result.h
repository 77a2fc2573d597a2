// Result<T>: a value or an Error, like std::expected (which nvcc 13's C++20 lacks). [[nodiscard]]:
// an ignored failure is a bug. value() on an error throws BadResultAccess, a programming error.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <graphcap/error.h>

namespace graphcap {

class BadResultAccess : public std::exception {
 public:
  explicit BadResultAccess(const Error& error) : what_("value() of a failed Result: " + to_string(error)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

template <class T = void>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported; use Result<T*>");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Error>, "Result<Error> is ambiguous");

 public:
  using value_type = T;

  template <class U = T,
            std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                 !std::is_same_v<std::remove_cvref_t<U>, Result> &&
                                 !std::is_same_v<std::remove_cvref_t<U>, Error>,
                             int> = 0>
  Result(U&& value) : storage_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT
  Result(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}      // NOLINT

  bool has_value() const noexcept { return storage_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { check(); return std::get<0>(storage_); }
  const T& value() const& { check(); return std::get<0>(storage_); }
  T&& value() && { check(); return std::get<0>(std::move(storage_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(storage_) : static_cast<T>(std::forward<U>(fallback));
  }

  // The error; only valid when !has_value().
  const Error& error() const& { return std::get<1>(storage_); }
  Error&& error() && { return std::get<1>(std::move(storage_)); }

 private:
  void check() const {
    if (!has_value()) throw BadResultAccess(std::get<1>(storage_));
  }

  std::variant<T, Error> storage_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;

  Result() noexcept = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT

  bool has_value() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  void value() const {
    if (error_) throw BadResultAccess(*error_);
  }

  const Error& error() const& { return *error_; }
  Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

}  // namespace graphcap
