// Param<T>: a scalar kernel argument whose value changes per replay without re-recording (a step
// index, a sequence length, a scale). Made by Device::param<T>(initial), bound to launches with
// Arg::param(p):
//   Param<std::uint32_t> step = device.param<std::uint32_t>(0);
//   device.launch(s, k, dims, {Arg::out(buf), Arg::param(step)});   // eager: step.value()
//   ... record the launches into `graph` ...
//   graph.set(step, 7);   // every node of `graph` that took `step` gets 7 from its next replay
// The value eager launches use is Param::value() (Param::set changes it; it does not touch
// graphs). Each graph keeps its own value per param, changed by Graph::set. A Param is a shared
// handle: copies name the same param.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include <graphcap/device_limits.h>

namespace graphcap {

class Device;
class Arg;
class Graph;

namespace detail {
// The value cell behind a Param (param.cc): its bytes, guarded (set and value may race across
// threads). Not part of the API: a Param's copies share one, and a recording keeps it as the
// param's identity.
class ParamSlot;
inline constexpr std::size_t kMaxParamBytes = kMaxArgBytes;
std::shared_ptr<ParamSlot> make_param_slot(const void* initial, std::size_t size);
void load_param(const ParamSlot& slot, void* out) noexcept;
void store_param(ParamSlot& slot, const void* in) noexcept;
}  // namespace detail

template <class T>
class Param {
  static_assert(std::is_trivially_copyable_v<T>, "kernel arguments are copied bytewise");
  static_assert(sizeof(T) <= detail::kMaxParamBytes, "pass larger parameters through a Buffer");
  static_assert(alignof(T) <= 8, "kernel parameters are at most 8-byte aligned");

 public:
  using value_type = T;
  Param() = default;  // empty: binding it is Errc::invalid_argument

  explicit operator bool() const noexcept { return slot_ != nullptr; }
  // The value eager launches take (and a recording takes as the node's first value).
  T value() const noexcept {
    T out{};
    if (slot_) detail::load_param(*slot_, &out);
    return out;
  }
  void set(T value) noexcept {
    if (slot_) detail::store_param(*slot_, &value);
  }

 private:
  // The slot is the param's identity: Arg::param binds it, Graph::set and took look it up.
  friend class Device;
  friend class Arg;
  friend class Graph;
  explicit Param(std::shared_ptr<detail::ParamSlot> slot) noexcept : slot_(std::move(slot)) {}

  std::shared_ptr<detail::ParamSlot> slot_;
};

// What Graph::set takes for a Param<T>: a T, or an arithmetic value whose type converts to an
// arithmetic T without narrowing (as T{value} would: a std::uint16_t for a Param<std::uint32_t>,
// a float for a Param<double>; not an int for a Param<std::uint32_t>, not a double for a
// Param<float>). Decided by the types, at compile time.
template <class U, class T>
concept param_value_for =
    std::is_same_v<U, T> ||
    (std::is_arithmetic_v<T> && std::is_arithmetic_v<U> && requires(U u) { T{u}; });

// Whether `value` can be held by a T exactly (no narrowing, no sign change, no truncation), for
// code that converts run-time values itself before a Graph::set.
template <class T, class U>
constexpr bool param_holds(U value) noexcept {
  if constexpr (std::is_same_v<T, U>) {
    return true;
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<U, bool>) {
    return false;
  } else if constexpr (std::is_integral_v<T> && std::is_integral_v<U>) {
    return std::in_range<T>(value);
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<U>) {
    if (!(value == value) || std::trunc(value) != value) return false;  // NaN or fractional
    // Within T's range: compare against 2^digits, exactly representable in U.
    const long double v = value;
    return v >= static_cast<long double>(std::numeric_limits<T>::min()) &&
           v < std::ldexp(1.0L, std::numeric_limits<T>::digits);
  } else if constexpr (std::is_floating_point_v<T> && std::is_arithmetic_v<U>) {
    if constexpr (std::is_floating_point_v<U>) {
      if (!(value == value) || std::isinf(value)) return true;  // NaN and infinities carry over
    }
    return static_cast<U>(static_cast<T>(value)) == value;
  } else {
    return std::is_convertible_v<U, T>;
  }
}

}  // namespace graphcap
