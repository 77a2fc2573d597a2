// Device: pooled memory and the host's copies in and out of it.
#include <cstring>
#include <string>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/driver/driver_hooks.h>
#include <graphcap/handle_access.h>
#include <graphcap/log.h>
#include <graphcap/memory/buffer_state.h>
#include <graphcap/try.h>

namespace graphcap {
namespace {

using detail::StreamCore;

Result<void> check_range(const Buffer& buffer, std::size_t offset, std::size_t count,
                         const char* operation) {
  if (offset > buffer.size() || count > buffer.size() - offset) {  // no overflow: compare apart
    return Error(Errc::invalid_argument,
                 std::string(operation) + ": bytes [" + std::to_string(offset) + ", " +
                     std::to_string(offset) + " + " + std::to_string(count) +
                     ") lie outside the buffer of " + std::to_string(buffer.size()) + " bytes");
  }
  return {};
}

// A recorded write's label: "write of N bytes from the host"; numbers: bytes, the staging
// memory's host address, the offset in the destination.
std::string write_label(const capture::OperationLabel& label) {
  return "write of " + std::to_string(label.numbers[0]) + " bytes from the host";
}

}  // namespace

Result<Buffer> Device::alloc(std::size_t bytes, Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "alloc"));
  if (bytes == 0) return Error(Errc::invalid_argument, "alloc: zero bytes requested");
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  Result<std::shared_ptr<memory::BufferState>> state = stream.allocate(bytes);
  if (!state) return std::move(state).error().context("alloc");
  // The driver learns the Buffer's extent inside its slice (a checking driver, the fake, checks
  // kernels against it; libcuda ignores it).
  detail::DriverHooks::annotate_buffer(core_->driver(), (*state)->device_ptr(), bytes);
  return HandleAccess::buffer(std::move(*state));
}

Result<Buffer> Device::upload(std::span<const std::byte> bytes, Stream& s,
                             std::source_location where) {
  GRAPHCAP_ASSIGN_OR_RETURN(Buffer buffer, alloc(bytes.size(), s));
  GRAPHCAP_TRY(write(buffer, bytes, s, where));
  return buffer;
}

Result<void> Device::write(const Buffer& dst, std::span<const std::byte> bytes, Stream& s,
                           std::source_location where) {
  return write(dst, 0, bytes, s, where);
}

Result<void> Device::write(const Buffer& dst, std::size_t offset, std::span<const std::byte> bytes,
                           Stream& s, std::source_location where) {
  GRAPHCAP_TRY(check_stream(s, "write"));
  if (Result<void> ok = check_buffer(dst, s, "the destination", true); !ok) return ok.error().context("write");
  GRAPHCAP_TRY(check_range(dst, offset, bytes.size(), "write"));
  if (bytes.empty()) return {};
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  const bool whole = offset == 0 && bytes.size() == dst.size();
  const capture::BufferUse use{&HandleAccess::state(dst),
                               whole ? capture::Access::write_whole : capture::Access::write_part};
  capture::Operation op;
  op.node = CU_GRAPH_NODE_TYPE_MEMCPY;
  op.uses = {&use, 1};
  if (stream.recording() || log_enabled(LogLevel::debug)) {
    op.label = capture::OperationLabel(&write_label);
    op.label.numbers[0] = bytes.size();
    op.label.numbers[2] = offset;
    op.label.where = where;
    capture::OperationLabel::BufferArg arg;
    arg.access = static_cast<std::uint8_t>(Arg::Access::out);
    arg.bytes = dst.size();
    arg.address = dst.native_handle();
    arg.label = HandleAccess::state(dst)->label();
    op.label.add_buffer_arg(arg);
  }
  Result<void> done = [&] {
  std::lock_guard lock(stream.mutex());
  return stream.run(
      op,
      [&]() -> Result<void> {
        Result<std::shared_ptr<memory::Allocation>> staging =
            stream.take_slice(stream.staging_pool(), bytes.size());
        if (!staging) return std::move(staging).error().context("staging memory");
        op.staging = std::move(*staging);
        void* host = op.staging->slice().host_ptr();
        std::memcpy(host, bytes.data(), bytes.size());
        op.label.numbers[1] = reinterpret_cast<std::uintptr_t>(host);  // the graph pins it
        if (CUresult result = core_->driver().cuMemcpyHtoDAsync(dst.native_handle() + offset, host,
                                                                bytes.size(), stream.target());
            result != CUDA_SUCCESS) {
          return Error::from_driver("cuMemcpyHtoDAsync", result);
        }
        return {};
      },
      [&where] { return "write" + capture::located(where); },
      [](std::size_t) { return std::string("the destination"); });
  }();
  stream.return_borrowed(op);
  return done;
}

Result<std::vector<std::byte>> Device::read(const Buffer& src, Stream& s) {
  return read(src, 0, src.size(), s);
}

Result<std::vector<std::byte>> Device::read(const Buffer& src, std::size_t offset,
                                            std::size_t count, Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "read"));
  if (Result<void> ok = check_buffer(src, s, "the source", false); !ok) return ok.error().context("read");
  GRAPHCAP_TRY(check_range(src, offset, count, "read"));
  if (count == 0) return std::vector<std::byte>{};
  StreamCore& stream = HandleAccess::core(s);
  if (stream.recording()) {
    return Error(Errc::graph_state,
                 "read: the stream is recording; a read waits for the stream, which would "
                 "invalidate the recording (read before begin_capture or after end_capture)");
  }
  if (core_->unsafe_calls_forbidden()) {
    return Error(Errc::graph_state,
                 "read: a recording is open in global mode (or on this thread); waiting for a "
                 "stream now would invalidate it");
  }
  if (std::optional<Error> failure = src.failure()) return *failure;
  GRAPHCAP_ASSIGN_OR_RETURN(std::shared_ptr<memory::Allocation> staging,
                            stream.copy_to_host(HandleAccess::state(src), offset, count));
  GRAPHCAP_TRY(stream.synchronize("read"));
  if (std::optional<Error> queued = stream.errors().take()) return queued->context("read");
  if (std::optional<Error> failure = src.failure()) return *failure;
  const auto* data = static_cast<const std::byte*>(staging->slice().host_ptr());
  return std::vector<std::byte>(data, data + count);
}

}  // namespace graphcap
