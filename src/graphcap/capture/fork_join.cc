#include <graphcap/capture/fork_join.h>

#include <string>

namespace graphcap::capture {

std::vector<std::size_t> ForkJoin::marks(int stream) const {
  std::lock_guard lock(book_->mutex());
  return book_->topology_locked().frontier(stream);
}

void ForkJoin::waited(int stream, const std::vector<std::size_t>& nodes) {
  std::lock_guard lock(book_->mutex());
  book_->topology_locked().add_dependencies(stream, nodes);
}

Result<void> ForkJoin::join(Window& side, int stream, std::uint64_t id,
                            const std::vector<std::size_t>& after) {
  std::lock_guard lock(book_->mutex());
  if (!book_->open_locked() || book_->id_locked() != id) {
    return Error(Errc::graph_state,
                 "wait: the event was recorded in a recording that has ended; record it again");
  }
  sides_.push_back(&side);
  book_->topology_locked().add_dependencies(stream, after);
  return {};
}

std::optional<Error> ForkJoin::unjoined_locked() const {
  const RecordedTopology& topology = book_->topology_locked();
  const int origin = book_->stream_index();
  const std::optional<std::pair<int, std::size_t>> side = topology.unjoined(origin);
  if (!side) return std::nullopt;
  const auto [stream, last] = *side;
  return Error(Errc::graph_state,
               "end_capture: stream " + std::to_string(stream) + " was forked into the "
               "recording and its work is not joined back into stream " +
                   std::to_string(origin) + ": its last unjoined operation is " +
                   topology.label(last).first_line() + " (node " + std::to_string(last) +
                   "); record an event on stream " + std::to_string(stream) +
                   " after it and wait for it on stream " + std::to_string(origin) +
                   " before end_capture (the driver would refuse the recording with "
                   "CUDA_ERROR_STREAM_CAPTURE_UNJOINED)");
}

}  // namespace graphcap::capture
