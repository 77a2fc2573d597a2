// Device::record_external: the buffers of work graphcap does not issue itself (cuBLAS, NCCL, raw
// launches on Stream::native_handle()), given the same bookkeeping as a launch: checked, pinned
// while recorded, claimed on refusal, marked on failure.
#include <array>
#include <string>

#include <graphcap/arg_access.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

namespace graphcap {
namespace {

constexpr std::size_t kMaxExternalArgs = 64;


// The declared buffers as the operation's uses; an error for anything that is not a buffer of s.
template <class CheckBuffer>
Result<std::size_t> external_uses(std::initializer_list<Arg> args, CheckBuffer&& check,
                                  std::array<capture::BufferUse, kMaxExternalArgs>& uses) {
  if (args.size() > kMaxExternalArgs) {
    return Error(Errc::invalid_argument, "record_external: " + std::to_string(args.size()) +
                                             " buffers (at most " +
                                             std::to_string(kMaxExternalArgs) + ")");
  }
  std::size_t count = 0;
  for (const Arg& arg : args) {
    const Buffer* buffer = arg.buffer();
    if (buffer == nullptr) {
      return Error(Errc::invalid_argument,
                   "record_external: argument " + std::to_string(count) +
                       " is a value; external work is declared by the buffers it reads and "
                       "writes (Arg::in, Arg::out, Arg::inout)");
    }
    if (Result<void> ok = check(*buffer, arg.access() != Arg::Access::in); !ok) {
      return ok.error().context("record_external: argument " + std::to_string(count));
    }
    uses[count] = {&HandleAccess::state(*buffer), detail::access_of(arg.access())};
    ++count;
  }
  return count;
}

}  // namespace

// External work is enqueued after its declaration, so a fence recorded for another stream's
// buffer (as an eager launch of a borrowed buffer gets) would come before it: only the stream's own
// buffers may be declared.
Result<void> Device::check_external(const Buffer& buffer, Stream& s, bool writes) const {
  if (buffer && &static_cast<const detail::StreamCore&>(HandleAccess::state(buffer)->owner())
                        .device() != core_.get()) {
    return check_buffer(buffer, s, "it", writes);  // names both devices
  }
  if (buffer && &HandleAccess::state(buffer)->owner() !=
                    static_cast<memory::SliceOwner*>(&HandleAccess::core(s))) {
    return Error(Errc::invalid_argument,
                 "the buffer belongs to another stream: external work may use only buffers of "
                 "the stream it runs on (copy it there with Device::copy first)");
  }
  return check_buffer(buffer, s, "it", writes);
}

Result<void> Device::record_external(Stream& s, std::initializer_list<Arg> args,
                                     std::source_location where) {
  GRAPHCAP_TRY(check_stream(s, "record_external"));
  std::array<capture::BufferUse, kMaxExternalArgs> uses;
  Result<std::size_t> count =
      external_uses(args, [&](const Buffer& b, bool writes) { return check_external(b, s, writes); },
                    uses);
  if (!count) return count.error();
  detail::StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  capture::Operation op;
  op.node = CU_GRAPH_NODE_TYPE_EMPTY;
  op.uses = {uses.data(), *count};
  op.external = true;
  op.label.where = where;
  return stream.run(
      op, []() -> Result<void> { return {}; },  // the caller issues the work, right after
      [&where] { return "record_external" + capture::located(where); },
      [](std::size_t i) { return "buffer " + std::to_string(i); });
}

Result<void> Device::record_external(Stream& s, std::initializer_list<Arg> args,
                                     const Error& failure, std::source_location where) {
  GRAPHCAP_TRY(check_stream(s, "record_external"));
  std::array<capture::BufferUse, kMaxExternalArgs> uses;
  Result<std::size_t> count =
      external_uses(args, [&](const Buffer& b, bool writes) { return check_external(b, s, writes); },
                    uses);
  if (!count) return count.error();
  // Only what it writes matters now: its inputs are not checked (the work did not happen).
  std::size_t writes = 0;
  for (std::size_t i = 0; i < *count; ++i) {
    if (capture::writes(uses[i].access)) uses[writes++] = {uses[i].buffer, capture::Access::write_part};
  }
  detail::StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  capture::Operation op;
  op.node = CU_GRAPH_NODE_TYPE_EMPTY;
  op.uses = {uses.data(), writes};
  op.external = true;
  op.label.where = where;
  return stream.run(
      op, [&]() -> Result<void> { return failure; },
      [&where] { return "external work" + capture::located(where); },
      [](std::size_t i) { return "buffer " + std::to_string(i); });
}

}  // namespace graphcap
