// Allocations (in and out of pool windows), host writes, reads, syncs and drops, and what a read
// back must hold.
#include <algorithm>
#include <string>
#include <utility>

#include "device_fixture.h"
#include "many_graphs/model.h"

namespace graphcap::testing::many_graphs {

// Device::alloc on stream `s`: the model buffer's id, or the error.
Result<int> do_alloc(Model& m, int s) {
  const bool own_window = m.state(s) != CaptureState::no_capture && !m.side(s);
  const int pool = own_window ? m.windows[static_cast<std::size_t>(s)].pool : -1;
  // In a pool's recording the pool lends first, when it has memory to lend at all.
  const bool may_lend = pool >= 0 && m.state(s) == CaptureState::capture && m.pool_bytes_held(pool) > 0;
  m.log() << "alloc(" << kBytes << " bytes, stream " << s << ") as buffer " << m.buffers.size() << "\n";
  m.faults.arm({"cuMemAlloc", "cuEventQuery", "cuMemFree"});
  Result<Buffer> made = m.device().alloc(kBytes, m.stream(s));
  m.faults.settle();
  if (m.recording_open()) {
    // The pools serve it from cache or refuse: a pool that may not grow now.
    m.expect_either(made, std::nullopt, Errc::out_of_memory, "alloc (a recording is open)");
  } else {
    m.expect(made, std::nullopt, "alloc");
  }
  if (!made) {
    if (m.in_recording(s) && !m.recording.doomed) m.recording.doomed = made.error().code();
    check_all(m);
    return made.error();
  }
  ModelBuffer model;
  model.owner = s;
  model.live = true;
  model.handle = *made;
  model.ptr = made->native_handle();
  model.window = pool >= 0 ? m.windows[static_cast<std::size_t>(s)].id : 0;
  model.maybe_lent = may_lend;
  model.writer = s;  // the allocation counts as a write on its owner, lent or not
  model.write_seq = model.use_seq = ++m.streams[s].seq;
  // No two live buffers share an address range (a pool never lends live memory).
  for (std::size_t b = 0; b < m.buffers.size(); ++b) {
    const ModelBuffer& other = m.buffers[b];
    if (other.live && other.ptr < model.ptr + kBytes && model.ptr < other.ptr + kBytes) {
      m.world.diverge("alloc: buffer " + std::to_string(m.buffers.size()) + " overlaps live buffer " +
                      std::to_string(b));
    }
  }
  const int id = static_cast<int>(m.buffers.size());
  m.buffers.push_back(std::move(model));
  if (may_lend) m.recording.maybe_lent.push_back(id);
  check_all(m);
  return id;
}

// A host write of the whole buffer (only while no recording is open: a recording's staging is
// the pools' cache or a refusal, which random_lifecycle_test.cc covers).
Result<void> do_write(Model& m, int b, int s) {
  std::vector<std::uint32_t> data(kN);
  for (std::uint32_t& v : data) v = m.world.value();
  m.log() << "write(buffer " << b << ", stream " << s << ")\n";
  m.faults.arm({"cuMemAllocHost", "cuMemcpyHtoDAsync", "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent",
                "cuEventDestroy"});
  Result<void> written = m.device().write(m.buf(b).handle, to_bytes(data), m.stream(s));
  m.faults.settle();
  const std::optional<Errc> refusal = m.refused_use(s, b, true);
  m.expect(written, refusal,
           std::string("write") + (refusal == Errc::invalid_argument ? " not ordered"
                                   : refusal                         ? " of a buffer failed for good"
                                                                     : ""));
  if (!written) {
    const Error& error = written.error();
    if (!refusal && error.code() != Errc::invalid_argument &&
        error.message().find("ordering a buffer of another stream") == std::string::npos) {
      m.fail(b, error.code());
    }
    check_all(m);
    return written;
  }
  const std::uint64_t seq = ++m.streams[s].seq;
  m.stamp(s, b, true, seq);
  m.buf(b).write_words(0, data);
  m.clear_failure(b);
  hand_back(m, s, seq, {m.buf(b).owner});
  check_all(m);
  return written;
}

void do_upload(Model& m, int s) {
  Result<int> made = do_alloc(m, s);
  if (made) (void)do_write(m, *made, s);
}

void do_drop(Model& m, int b) {
  m.faults.arm({"cuEventRecord"});
  m.drop(b);
  m.faults.settle();
  check_all(m);
}

void do_read(Model& m, int b, int s) {
  m.log() << "read(buffer " << b << ", stream " << s << ")\n";
  ModelBuffer& buffer = m.buf(b);
  m.faults.arm({"cuMemAllocHost", "cuMemcpyDtoHAsync", "cuStreamSynchronize"});
  Result<std::vector<std::byte>> read = m.device().read(buffer.handle, m.stream(s));
  m.faults.settle();
  std::optional<Errc> expected;
  std::string what = "read";
  bool stamps = false;
  std::optional<Errc>& queued = m.queued[static_cast<std::size_t>(s)];
  if (const std::optional<Errc> refusal = m.refused_use(s, b, false)) {
    expected = refusal;
    what = *refusal == Errc::invalid_argument ? "read not ordered" : "read of a buffer failed for good";
  } else if (m.recording_open()) {
    expected = Errc::graph_state;
    what = "read while recording";
  } else if (buffer.failure) {
    expected = buffer.failure;
    what = "read of a failed buffer";
  } else {
    stamps = true;
    expected = std::exchange(queued, std::nullopt);  // surfaces once
  }
  m.expect(read, expected, what);
  if (m.degraded()) {
    queued.reset();
    stamps = read || (read.error().code() != Errc::invalid_argument && read.error().code() != Errc::graph_state);
  }
  // Past the failure check a read is an operation of its stream (its staging's use); a read
  // of the stream's own buffer is stamped on it.
  if (stamps) {
    const std::uint64_t seq = ++m.streams[s].seq;
    if (buffer.owner == s) m.stamp(s, b, false, seq);
    // Then it waited for its stream (a queued error is reported after the wait).
    if (read || (!m.degraded() && expected && read.error().code() == *expected)) m.streams.completed(s);
  }
  if (read) compare(m, b, *read, "read");
  if (read && !m.recording_open()) m.release_deferred();
  check_all(m);
}

// Bytes read back must be exactly the known ones.
void compare(Model& m, int b, const std::vector<std::byte>& bytes, const char* how) {
  const ModelBuffer& buffer = m.buf(b);
  // Named only when something is wrong: every buffer is compared after every step.
  const auto name = [&] { return std::string(how) + ": buffer " + std::to_string(b); };
  if (buffer.failure && !m.degraded()) {
    m.world.diverge(name() + " read back bytes where it must carry " + to_string(*buffer.failure));
    return;
  }
  if (bytes.size() != kBytes) {
    m.world.diverge(name() + " read back " + std::to_string(bytes.size()) + " bytes");
    return;
  }
  m.compared += buffer.known_count(0, kN);
  const std::vector<std::uint32_t> words = to_u32(bytes);
  if (buffer.first_mismatch(words, 0)) m.world.diverge(*buffer.mismatch(words, 0, name()));
}

Result<void> do_sync(Model& m, int s) {
  m.log() << "sync(stream " << s << ")\n";
  m.faults.arm({"cuStreamSynchronize", "cuGraphExecDestroy", "cuGraphDestroy"});
  Result<void> synced = m.device().sync(m.stream(s));
  m.faults.settle();
  std::optional<Errc>& queued = m.queued[static_cast<std::size_t>(s)];
  std::optional<Errc> expected;
  if (m.recording_open()) {
    expected = Errc::graph_state;
  } else {
    expected = std::exchange(queued, std::nullopt);
  }
  m.expect(synced, expected, m.recording_open() ? "sync while recording" : "sync");
  if (m.degraded() && !m.recording_open()) queued.reset();
  if (!m.recording_open() && (synced || synced.error().code() != Errc::graph_state)) {
    m.release_deferred();
  }
  if (!m.recording_open() && (synced || (!m.degraded() && expected && synced.error().code() == *expected))) {
    m.streams.completed(s);
  }
  check_all(m);
  return synced;
}

}  // namespace graphcap::testing::many_graphs
