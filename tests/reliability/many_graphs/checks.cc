// The model after every call: every stream's capture_state() (and, after a fault, the model
// following it), cuStreamIsCapturing through the driver under the decorator, every live buffer's
// failure (Buffer::failure()), and, when no recording is open, every live buffer's bytes (read on
// the world's checking stream, ordered after every other by events, so the check changes no
// buffer's uses) and what the pools hold.
#include <string>

#include "many_graphs/model.h"

namespace graphcap::testing::many_graphs {
namespace {

std::string errc_text(const std::optional<Errc>& code) { return code ? to_string(*code) : std::string("ok"); }

// After a fault: follow what graphcap says a stream is doing.
void resync(Model& m, int s, CaptureState actual) {
  const CaptureState was = m.state(s);
  m.log() << "  (after a fault: stream " << s << " is in " << to_string(actual) << " state, the model said "
          << to_string(was) << ")\n";
  if (was == CaptureState::capture && actual != CaptureState::capture) {
    if (!m.side(s) && m.streams.origin() == s) {
      close_recording(m, Errc::driver);
    } else {
      m.streams[s].side = false;
    }
    m.streams[s].state = actual;
    if (actual == CaptureState::no_capture) close_window(m, s);
  } else if (was == CaptureState::prepare && actual == CaptureState::no_capture) {
    close_window(m, s);
  } else if (was == CaptureState::prepare && actual == CaptureState::capture && !m.recording_open()) {
    open_recording(m, s);
  } else {
    m.world.diverge("stream " + std::to_string(s) + " is in " + to_string(actual) +
                    " state after a fault, where the model has it in " + to_string(was));
  }
}

bool check_states(Model& m) {
  for (int s = 0; s < kStreams; ++s) {
    const CaptureState actual = m.stream(s).capture_state();
    if (actual == m.state(s)) continue;
    if (!m.degraded()) {
      m.world.diverge("stream " + std::to_string(s) + " is in " + to_string(actual) + " state, the model says " +
                      to_string(m.state(s)));
      return false;
    }
    resync(m, s, actual);
    if (!m.ok()) return false;
  }
  return true;
}

bool check_driver_states(Model& m) {
  for (int s = 0; s <= kStreams; ++s) {
    Stream& on = s < kStreams ? m.stream(s) : m.world.checker();
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (CUresult r = m.world.driver_under_test().cuStreamIsCapturing(on.native_handle(), &status);
        r != CUDA_SUCCESS) {
      m.world.diverge("cuStreamIsCapturing failed with " + std::to_string(r));
      return false;
    }
    const bool capturing = on.capture_state() == CaptureState::capture;
    if (!capturing && status != CU_STREAM_CAPTURE_STATUS_NONE) {
      m.world.diverge("stream " + std::to_string(s) + " is left capturing: graphcap says " +
                      to_string(on.capture_state()) + ", the driver's status is " + std::to_string(status));
      return false;
    }
    if (capturing && !m.degraded() && status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      m.world.diverge("stream " + std::to_string(s) + " records, but the driver's status is " +
                      std::to_string(status));
      return false;
    }
  }
  return true;
}

bool check_failures(Model& m) {
  if (m.degraded()) return true;
  for (std::size_t b = 0; b < m.buffers.size(); ++b) {
    const ModelBuffer& buffer = m.buffers[b];
    if (!buffer.live) continue;
    const std::optional<Error> failure = buffer.handle.failure();
    const std::optional<Errc> got = failure ? std::optional<Errc>(failure->code()) : std::nullopt;
    if (got != buffer.failure) {
      m.world.diverge("buffer " + std::to_string(b) + " carries " +
                      (failure ? to_string(*failure) : std::string("no failure")) + ", the model says " +
                      errc_text(buffer.failure));
      return false;
    }
  }
  return true;
}

void check_bytes(Model& m) {
  if (m.degraded()) {
    // After a fault the model's order may be wrong: finish everything before going on, so no
    // work the model issues can race another stream's on a GPU.
    for (int s = 0; s < kStreams; ++s) {
      if (m.device().sync(m.stream(s))) m.streams.completed(s);
      m.queued[static_cast<std::size_t>(s)].reset();
    }
  }
  if (!m.world.order_checker()) return;
  for (std::size_t b = 0; b < m.buffers.size() && m.ok(); ++b) {
    ModelBuffer& buffer = m.buffers[b];
    if (!buffer.live) continue;
    Result<std::vector<std::byte>> read = m.device().read(buffer.handle, m.world.checker());
    ++m.checks;
    if (!read) {
      if (!m.degraded() && buffer.failure != read.error().code()) {
        m.world.diverge("check: reading buffer " + std::to_string(b) + " gave " + to_string(read.error()) +
                        ", the model says " + errc_text(buffer.failure));
      }
      continue;
    }
    compare(m, static_cast<int>(b), *read, "check");
    // The checking stream, ordered after every stream's work so far, waited for it.
    for (int s = 0; s < kStreams; ++s) m.streams.completed(s);
  }
}

// A pool holds no memory once none of its graphs lives, and no buffer it lent either (nor a
// graph that uses one: a lent buffer kept past its window may be used in any recording).
void check_pools(Model& m) {
  auto lent_by = [&](const ModelGraph& graph, int p) {
    for (const std::set<int>* used : {&graph.reads, &graph.writes}) {
      for (int b : *used) {
        if (m.buf(b).for_good && m.buf(b).lent_by == p) return true;
      }
    }
    return false;
  };
  for (int p = 0; p <= kCachePool; ++p) {
    bool holds = false;
    for (const ModelGraph& graph : m.graphs) {
      holds = holds || (graph.live && (graph.pool == p || lent_by(graph, p)));
    }
    for (const CacheKey& key : m.cache.keys) {
      holds = holds || (key.has_graph && (key.graph.pool == p || lent_by(key.graph, p)));
    }
    for (const ModelBuffer& buffer : m.buffers) {
      holds = holds || (buffer.live && buffer.for_good && buffer.lent_by == p);
    }
    if (!holds && m.pool_bytes_held(p) != 0) {
      m.world.diverge("pool " + std::to_string(p) + " holds " + std::to_string(m.pool_bytes_held(p)) +
                      " bytes with no graph of it and no buffer it lent alive");
      return;
    }
  }
}

}  // namespace

void check_all(Model& m) {
  if (!m.ok() || !check_states(m) || !check_driver_states(m) || !check_failures(m)) return;
  // Reads make driver calls: not inside a cache run (its step's calls may be armed with a
  // fault), nor while a recording is open (a read then is refused).
  if (m.cache.in_run != 0 || m.faults.inside_call() || m.recording_open()) return;
  check_bytes(m);
  if (!m.deferred && !m.degraded() && m.ok()) check_pools(m);
}

}  // namespace graphcap::testing::many_graphs
