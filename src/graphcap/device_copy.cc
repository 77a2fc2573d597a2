// Device::copy and Device::fill: device-to-device copies (cuMemcpyDtoDAsync; between devices too,
// as peer copies: unified addressing makes a pointer name its device, so the same call and the same
// MEMCPY node carry them) and memsets
// (cuMemsetD8Async, cuMemsetD32Async), eager or recorded (a MEMCPY or MEMSET node), under the
// rules of launches: ranges checked before the driver sees them, a source carrying a failure
// skips the copy and the destination carries it, a recorded write is claimed and its memory
// pinned, and only an eager copy or fill of the whole destination clears a failure it carried.
#include <cstdio>
#include <string>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/log.h>
#include <graphcap/memory/buffer_state.h>
#include <graphcap/try.h>

namespace graphcap {
namespace {

using detail::StreamCore;

Result<void> check_span(const Buffer& buffer, std::size_t offset, std::size_t count,
                        const char* operation, const char* what) {
  if (offset > buffer.size() || count > buffer.size() - offset) {  // no overflow: compare apart
    return Error(Errc::invalid_argument,
                 std::string(operation) + ": bytes [" + std::to_string(offset) + ", " +
                     std::to_string(offset) + " + " + std::to_string(count) + ") of " + what +
                     " lie outside its " + std::to_string(buffer.size()) + " bytes");
  }
  return {};
}

// A recorded copy's label; numbers: bytes, source offset and size, destination offset and size;
// name: the devices of a peer copy ("device 1 to device 0"), none for a local one.
std::string copy_label(const capture::OperationLabel& label) {
  const auto& n = label.numbers;
  return "memcpy " + std::to_string(n[0]) + " B " +
         (label.name ? *label.name : std::string("device to device")) + "\nfrom +" +
         std::to_string(n[1]) +
         " of " + std::to_string(n[2]) + " B\nto +" + std::to_string(n[3]) + " of " +
         std::to_string(n[4]) + " B";
}

// A recorded fill's label; numbers: bytes, element size (1 or 4), value, offset, buffer size.
std::string fill_label(const capture::OperationLabel& label) {
  const auto& n = label.numbers;
  char shown[16];
  if (n[1] == 4) {
    std::snprintf(shown, sizeof shown, "0x%08x", static_cast<unsigned>(n[2]));
  } else {
    std::snprintf(shown, sizeof shown, "0x%02x", static_cast<unsigned>(n[2]));
  }
  return "memset " + std::to_string(n[0]) + " B to " + shown +
         (n[1] == 4 ? " (32-bit words)" : "") + "\nat +" + std::to_string(n[3]) + " of " +
         std::to_string(n[4]) + " B";
}

// "device to device", or for a peer copy "device 1 to device 0".
std::string copy_direction(const Buffer& src, const Buffer& dst, const detail::DeviceCore& here) {
  auto device_of = [](const Buffer& buffer) -> const detail::DeviceCore& {
    return static_cast<const StreamCore&>(HandleAccess::state(buffer)->owner()).device();
  };
  const detail::DeviceCore& from = device_of(src);
  const detail::DeviceCore& to = device_of(dst);
  if (&from == &here && &to == &here) return "device to device";
  return from.name() + " to " + to.name();
}

// A buffer the operation uses, in its label: its address (what Graph::replay_checked issues it
// again with), size and label (what messages name it by).
void add_buffer(capture::OperationLabel& label, std::uint32_t index, const Buffer& buffer,
                Arg::Access access) {
  capture::OperationLabel::BufferArg arg;
  arg.index = index;
  arg.access = static_cast<std::uint8_t>(access);
  arg.bytes = buffer.size();
  arg.address = buffer.native_handle();
  arg.label = HandleAccess::state(buffer)->label();
  label.add_buffer_arg(arg);
}

}  // namespace

Result<void> Device::copy(const Buffer& dst, const Buffer& src, Stream& s,
                          std::source_location where) {
  if (!src) return Error(Errc::invalid_argument, "copy: the source is an empty Buffer");
  if (!dst) return Error(Errc::invalid_argument, "copy: the destination is an empty Buffer");
  if (src.size() > dst.size()) {
    return Error(Errc::invalid_argument,
                 "copy: the source's " + std::to_string(src.size()) +
                     " bytes don't fit in the destination's " + std::to_string(dst.size()) +
                     " (copy a range with copy(dst, dst_offset, src, src_offset, bytes, s))");
  }
  return copy(dst, 0, src, 0, src.size(), s, where);
}

Result<void> Device::copy(const Buffer& dst, std::size_t dst_offset, const Buffer& src,
                          std::size_t src_offset, std::size_t bytes, Stream& s,
                          std::source_location where) {
  GRAPHCAP_TRY(check_stream(s, "copy"));
  // check_copy_buffer: a buffer of another device is a peer copy (needs peer access).
  if (Result<void> ok = check_copy_buffer(src, s, "the source", false); !ok) {
    return ok.error().context("copy");
  }
  if (Result<void> ok = check_copy_buffer(dst, s, "the destination", true); !ok) {
    return ok.error().context("copy");
  }
  GRAPHCAP_TRY(check_span(src, src_offset, bytes, "copy", "the source"));
  GRAPHCAP_TRY(check_span(dst, dst_offset, bytes, "copy", "the destination"));
  const auto& src_state = HandleAccess::state(src);
  const auto& dst_state = HandleAccess::state(dst);
  if (src_state == dst_state && src_offset < dst_offset + bytes && dst_offset < src_offset + bytes &&
      bytes != 0) {
    // CUDA: the areas of a copy may not overlap (and names no error for it).
    return Error(Errc::invalid_argument,
                 "copy: the source bytes [" + std::to_string(src_offset) + ", " +
                     std::to_string(src_offset + bytes) + ") and destination bytes [" +
                     std::to_string(dst_offset) + ", " + std::to_string(dst_offset + bytes) +
                     ") of one buffer overlap; CUDA's copies may not overlap (copy through a "
                     "second buffer)");
  }
  if (bytes == 0) return {};
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  const bool whole = dst_offset == 0 && bytes == dst.size();
  const capture::BufferUse uses[2] = {
      {&src_state, capture::Access::read},
      {&dst_state, whole ? capture::Access::write_whole : capture::Access::write_part}};
  capture::Operation op;
  op.node = CU_GRAPH_NODE_TYPE_MEMCPY;
  op.uses = {uses, 2};
  Result<void> done = [&] {
    std::lock_guard lock(stream.mutex());
    if (stream.recording() || log_enabled(LogLevel::debug)) {
      op.label = capture::OperationLabel(&copy_label);
      op.label.numbers = {bytes, src_offset, src.size(), dst_offset, dst.size()};
      op.label.where = where;
      add_buffer(op.label, 0, src, Arg::Access::in);
      add_buffer(op.label, 1, dst, Arg::Access::out);
      if (std::string direction = copy_direction(src, dst, *core_);
          direction != "device to device") {
        op.label.name = std::make_shared<const std::string>(std::move(direction));
      }
    }
    return stream.run(
        op,
        [&]() -> Result<void> {
          if (CUresult result = core_->driver().cuMemcpyDtoDAsync(
                  dst.native_handle() + dst_offset, src.native_handle() + src_offset, bytes,
                  stream.target());
              result != CUDA_SUCCESS) {
            return Error::from_driver("cuMemcpyDtoDAsync", result);
          }
          return {};
        },
        [&where] { return "copy" + capture::located(where); },
        [](std::size_t use) { return std::string(use == 0 ? "the source" : "the destination"); });
  }();
  stream.return_borrowed(op);
  return done;
}

Result<void> Device::fill(const Buffer& dst, std::uint8_t byte, Stream& s,
                          std::source_location where) {
  if (!dst) return Error(Errc::invalid_argument, "fill: the destination is an empty Buffer");
  return fill(dst, 0, dst.size(), byte, s, where);
}

Result<void> Device::fill(const Buffer& dst, std::size_t offset, std::size_t count,
                          std::uint8_t byte, Stream& s, std::source_location where) {
  GRAPHCAP_TRY(check_stream(s, "fill"));
  if (Result<void> ok = check_buffer(dst, s, "the destination", true); !ok) {
    return ok.error().context("fill");
  }
  GRAPHCAP_TRY(check_span(dst, offset, count, "fill", "the destination"));
  if (count == 0) return {};
  return fill_with(dst, offset, count, 1, byte, s, where);
}

Result<void> Device::fill(const Buffer& dst, std::uint32_t word, Stream& s,
                          std::source_location where) {
  GRAPHCAP_TRY(check_stream(s, "fill"));
  if (Result<void> ok = check_buffer(dst, s, "the destination", true); !ok) {
    return ok.error().context("fill");
  }
  if (dst.size() % 4 != 0 || dst.native_handle() % 4 != 0) {
    return Error(Errc::invalid_argument,
                 "fill: a 32-bit fill needs a destination of whole, 4-byte aligned words; this "
                 "buffer has " + std::to_string(dst.size()) + " bytes (fill bytes instead)");
  }
  return fill_with(dst, 0, dst.size(), 4, word, s, where);
}

Result<void> Device::fill_with(const Buffer& dst, std::size_t offset, std::size_t bytes,
                               unsigned element_size, std::uint32_t value, Stream& s,
                               std::source_location where) {
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  const bool whole = offset == 0 && bytes == dst.size();
  const capture::BufferUse use{&HandleAccess::state(dst),
                               whole ? capture::Access::write_whole : capture::Access::write_part};
  capture::Operation op;
  op.node = CU_GRAPH_NODE_TYPE_MEMSET;
  op.uses = {&use, 1};
  Result<void> done = [&] {
    std::lock_guard lock(stream.mutex());
    if (stream.recording() || log_enabled(LogLevel::debug)) {
      op.label = capture::OperationLabel(&fill_label);
      op.label.numbers = {bytes, element_size, value, offset, dst.size()};
      op.label.where = where;
      add_buffer(op.label, 0, dst, Arg::Access::out);
    }
    return stream.run(
        op,
        [&]() -> Result<void> {
          const CUdeviceptr at = dst.native_handle() + offset;
          if (element_size == 1) {
            if (CUresult result = core_->driver().cuMemsetD8Async(
                    at, static_cast<unsigned char>(value), bytes, stream.target());
                result != CUDA_SUCCESS) {
              return Error::from_driver("cuMemsetD8Async", result);
            }
          } else if (CUresult result =
                         core_->driver().cuMemsetD32Async(at, value, bytes / 4, stream.target());
                     result != CUDA_SUCCESS) {
            return Error::from_driver("cuMemsetD32Async", result);
          }
          return {};
        },
        [&where] { return "fill" + capture::located(where); },
        [](std::size_t) { return std::string("the destination"); });
  }();
  stream.return_borrowed(op);
  return done;
}

}  // namespace graphcap
