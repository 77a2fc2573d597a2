// ForkJoin: the streams of one open recording (docs/capture-lifecycle.md, "Several streams in
// one recording"). An event recorded in the recording marks its stream's frontier; a stream that
// waits for it inside the recording depends on those nodes, and a stream outside any window that
// waits for it is forked into the recording (a side stream) until the recording closes. Closing
// with a side stream's work not joined back into the origin is refused by name. Guarded by the
// recording book's lock (side streams record under their own stream's mutex).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <graphcap/capture/recording_book.h>
#include <graphcap/result.h>

namespace graphcap::capture {

class Window;

class ForkJoin {
 public:
  explicit ForkJoin(RecordingBook& book) noexcept : book_(&book) {}
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;

  // The nodes an event recorded now on `stream` marks.
  std::vector<std::size_t> marks(int stream) const;
  // `stream` waited on an event marking `nodes`.
  void waited(int stream, const std::vector<std::size_t>& nodes);
  // `side` (stream `stream`) waited on an event of recording `id` marking `after`: it joins.
  // Refused (graph_state) when that recording is no longer open.
  Result<void> join(Window& side, int stream, std::uint64_t id,
                    const std::vector<std::size_t>& after);

  // ---- The close (the book's lock held) ----------------------------------------------------
  // Side streams' work the origin never waited for: the refusal naming it, before the driver
  // answers with a bare CUDA_ERROR_STREAM_CAPTURE_UNJOINED.
  std::optional<Error> unjoined_locked() const;
  // The side streams, which leave the recording once the driver's capture has ended.
  std::vector<Window*> take_sides_locked() { return std::exchange(sides_, {}); }

 private:
  RecordingBook* book_;
  std::vector<Window*> sides_;
};

}  // namespace graphcap::capture
