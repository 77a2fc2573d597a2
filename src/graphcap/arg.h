// Arg: one kernel argument. Buffers are bound with their access, which tells the device what a
// launch reads (checked for carried failures) and writes (marked when the launch fails, and
// claimed when a recording is refused); values are copied. An Arg holds its own handle to the
// buffer, so it is safe to store (`auto a = Arg::in(make_buffer());` keeps the buffer alive).
//   device.launch(s, k, dims, {Arg::in(src), Arg::out(dst), Arg::value(n)});
// Arg::param(p) passes a Param's current value (Param::value()); a recorded launch remembers
// which argument took it, so Graph::set(p, v) can change it per replay.
// Arg::condition(loop) passes a WHILE loop's conditional handle (8 bytes), for a kernel recorded
// in the same recording to set (loop.h); Arg::condition(c) the handle of an IF or SWITCH
// condition (condition.h); anywhere else they are refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include <graphcap/buffer.h>
#include <graphcap/condition.h>
#include <graphcap/device_limits.h>
#include <graphcap/loop.h>
#include <graphcap/param.h>

namespace graphcap {

class Arg {
 public:
  enum class Access : unsigned char { in, out, inout, value, param, condition };
  static constexpr std::size_t kMaxValueBytes = kMaxArgBytes;

  static Arg in(const Buffer& buffer) noexcept { return Arg(Access::in, buffer); }
  static Arg out(const Buffer& buffer) noexcept { return Arg(Access::out, buffer); }
  static Arg inout(const Buffer& buffer) noexcept { return Arg(Access::inout, buffer); }

  template <class T>
  static Arg value(const T& value) noexcept {
    static_assert(std::is_trivially_copyable_v<T>, "kernel arguments are copied bytewise");
    static_assert(sizeof(T) <= kMaxValueBytes, "pass larger parameters through a Buffer");
    static_assert(alignof(T) <= 8, "kernel parameters are at most 8-byte aligned");
    Arg arg(Access::value);
    std::memcpy(arg.bytes_, &value, sizeof(T));
    arg.size_ = sizeof(T);
    return arg;
  }

  // The param's current value, and the param itself for a recording to remember. An empty
  // Param is refused by the launch (Errc::invalid_argument).
  template <class T>
  static Arg param(const Param<T>& param) noexcept {
    Arg arg(Access::param);
    const T value = param.value();
    std::memcpy(arg.bytes_, &value, sizeof(T));
    arg.size_ = sizeof(T);
    arg.param_ = param.slot_;
    return arg;
  }

  // The loop's handle, for a kernel of the loop's recording to set. An empty Loop is refused by
  // the launch (Errc::invalid_argument).
  static Arg condition(const Loop& loop) noexcept {
    return conditional(loop.handle(), loop.recording(), loop.id_);
  }

  // The condition's handle, for a kernel of the condition's recording to set (before the branch
  // it steers). An empty Condition is refused by the launch (Errc::invalid_argument).
  static Arg condition(const Condition& condition) noexcept {
    return conditional(condition.handle(), condition.recording(), condition.id_);
  }

  Access access() const noexcept { return access_; }
  bool reads() const noexcept { return access_ == Access::in || access_ == Access::inout; }
  bool writes() const noexcept { return access_ == Access::out || access_ == Access::inout; }
  // The bound buffer (this Arg's own handle to it); nullptr for a value.
  const Buffer* buffer() const noexcept {
    return access_ == Access::value || access_ == Access::param || access_ == Access::condition
               ? nullptr
               : &buffer_;
  }
  // The bytes a value, param or condition argument passes (0 for a buffer, which passes its
  // device address).
  std::size_t size() const noexcept { return size_; }

 private:
  // The launch reads the rest (the bound param, the condition's recording, the bytes) through
  // HandleAccess.
  friend struct HandleAccess;
  explicit Arg(Access access) noexcept : access_(access) {}
  static Arg conditional(CUgraphConditionalHandle handle, std::uint64_t recording,
                         std::uint64_t id) noexcept {
    Arg arg(Access::condition);
    std::memcpy(arg.bytes_, &handle, sizeof handle);
    arg.size_ = sizeof handle;
    arg.recording_ = recording;
    arg.condition_ = id;
    return arg;
  }
  Arg(Access access, const Buffer& buffer) noexcept : access_(access), buffer_(buffer) {}

  Access access_;
  Buffer buffer_;
  std::shared_ptr<detail::ParamSlot> param_;
  std::uint64_t recording_ = 0;
  std::uint64_t condition_ = 0;
  std::size_t size_ = 0;
  alignas(8) std::byte bytes_[kMaxValueBytes] = {};
};

}  // namespace graphcap
