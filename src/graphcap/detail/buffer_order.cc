#include <graphcap/detail/buffer_order.h>

#include <string>
#include <vector>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>

namespace graphcap::detail {
namespace {

Error refusal(const memory::SliceOwner& other, std::uint64_t sequence, const StreamCore& stream,
              const char* what, const char* how) {
  // Every slice owner is a stream (StreamCore is the one memory::SliceOwner).
  auto& other_stream = static_cast<const StreamCore&>(other);
  if (&other_stream == &stream) {
    // A side stream's own eager work before its fork: the graph runs on the origin, after the
    // origin's earlier work only.
    return Error(Errc::invalid_argument,
                 std::string(what) + " was last " + how + " on this stream (" + stream.name() +
                     ", its operation " + std::to_string(sequence) + ") before it was forked "
                     "into the recording, and the graph replays on the recording's stream, "
                     "which nothing orders after that; order it first: "
                     "Device::record_event(event, " + stream.name() + ") after that use, then "
                     "Device::wait(<the recording's stream>, event) before begin_capture");
  }
  const bool same_device = &other_stream.device() == &stream.device();
  const std::string other_name =
      same_device ? other_stream.name() : other_stream.device().name() + " " + other_stream.name();
  const std::string this_name =
      same_device ? stream.name() : stream.device().name() + " " + stream.name();
  return Error(Errc::invalid_argument,
               std::string(what) + " was last " + how + " on " +
                   (same_device ? "another stream of this device ("
                                : "a stream of " + other_stream.device().name() + " (") +
                   other_name + ", its operation " + std::to_string(sequence) +
                   ") and nothing orders this stream (" + this_name +
                   ") after that; order it first: Device::record_event(event, " + other_name +
                   ") after that use, then Device::wait(" + this_name + ", event)");
}

}  // namespace

Result<void> check_buffer_order(const memory::BufferState& buffer, StreamCore& stream,
                                const char* what, bool writes) {
  if (used_last_here(buffer, stream, writes)) return {};
  const memory::BufferState::Usage usage = buffer.usage();
  // (ordered_after answers for this stream's own uses too: a side stream of a recording is not
  // ordered after its eager work before the fork.)
  const std::uint64_t needed = writes ? usage.use_sequence : usage.write_sequence;
  if (!stream.ordered_after(usage.writer, needed)) {
    return refusal(*usage.writer, needed, stream, what, writes ? "used" : "written");
  }
  if (writes) {
    for (const memory::BufferState::Use& reader : usage.readers) {
      if (!stream.ordered_after(reader.stream, reader.sequence)) {
        return refusal(*reader.stream, reader.sequence, stream, what, "read");
      }
    }
  }
  if (buffer.replays().concern(stream, buffer.owner())) [[unlikely]] {
    std::vector<memory::ReplayUses::At> replays;
    buffer.replays().conflicts(stream, writes, replays);
    for (const memory::ReplayUses::At& replay : replays) {
      if (!stream.ordered_after(replay.stream, replay.sequence)) {
        return refusal(*replay.stream, replay.sequence, stream, what,
                       replay.writes ? "written by a graph's replay" : "read by a graph's replay");
      }
    }
  }
  return {};
}

}  // namespace graphcap::detail
