// Threads: captures on different streams from different threads in thread-local mode,
// replays of different graphs from several threads, buffers and graphs dropped from other threads.
// Each asserts exact bytes; run under the tsan preset they are also the race detector's workload.
#include <barrier>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "matchers.h"
#include "thread_failures.h"

namespace graphcap::testing {
namespace {

constexpr int kThreads = 4;

class ThreadLocalCaptureTest : public DeviceFixture {
 protected:
  DeviceOptions device_options() const override {
    DeviceOptions options;
    options.capture_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    return options;
  }
};

TEST_F(ThreadLocalCaptureTest, CapturesOnDifferentStreamsFromDifferentThreads) {
  constexpr std::uint32_t kN = 128;
  constexpr int kLaunches = 12;
  constexpr int kReplays = 5;
  std::vector<Stream*> streams;
  for (int t = 0; t < kThreads; ++t) {
    Result<Stream*> stream = device_->create_stream();
    ASSERT_THAT(stream, IsOk());
    streams.push_back(*stream);
  }
  ThreadFailures failures;
  std::barrier all_recording(kThreads);
  std::barrier all_ended(kThreads);
  std::vector<std::vector<std::uint32_t>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Stream& s = *streams[t];
      const auto base = static_cast<std::uint32_t>(1000 * t);
      Result<Buffer> a = device_->upload(to_bytes(iota_u32(kN, base)), s);
      Result<Buffer> b = device_->alloc(kN * 4, s);
      bool ok = failures.check(a, "upload") && failures.check(b, "alloc");
      auto pass = [&] {
        for (int i = 0; i < kLaunches && ok; ++i) {
          // A scratch buffer per launch pair, from the primed pool inside the window.
          const bool forward = i % 2 == 0;
          ok = failures.check(add_one(forward ? *a : *b, forward ? *b : *a, kN, s), "launch");
        }
        Result<Buffer> scratch = device_->alloc(kN * 4, s);
        ok = ok && failures.check(scratch, "scratch") &&
             failures.check(device_->launch(s, copy_, dims_for(kN),
                                            {Arg::in(*a), Arg::out(*scratch), Arg::value(kN)}),
                            "copy");
      };
      ok = ok && failures.check(device_->prepare_capture(s), "prepare_capture");
      if (ok) pass();
      ok = ok && failures.check(device_->begin_capture(s), "begin_capture");
      all_recording.arrive_and_wait();  // every thread's window is open at once
      if (ok) pass();
      Result<Graph> graph = ok ? device_->end_capture(s) : Result<Graph>(Error(Errc::graph_state, "skipped"));
      ok = ok && failures.check(graph, "end_capture");
      all_ended.arrive_and_wait();
      for (int r = 0; r < kReplays && ok; ++r) ok = failures.check(graph->replay(), "replay");
      if (!ok) return;
      Result<std::vector<std::byte>> read = device_->read(*a, s);
      if (failures.check(read, "read")) results[t] = to_u32(*read);
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_THAT(failures.list(), IsEmpty());
  for (int t = 0; t < kThreads; ++t) {
    // Warm-up plus kReplays replays, each adding kLaunches to a.
    EXPECT_EQ(results[t], iota_u32(kN, 1000 * t + kLaunches * (1 + kReplays))) << "thread " << t;
  }
}

TEST_F(ThreadLocalCaptureTest, OtherThreadsAllocateSyncAndReadWhileOneRecords) {
  constexpr std::uint32_t kN = 64;
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  Buffer x = upload_u32(iota_u32(kN));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, kN), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, kN), IsOk());
  // In thread-local mode another thread's unsafe calls are fine: new sizes from the driver, syncs.
  ThreadFailures failures;
  std::thread worker([&] {
    for (std::size_t size : {std::size_t{3000}, std::size_t{70000}, std::size_t{12345}}) {
      Result<Buffer> y = device_->upload(to_bytes(iota_u32(size / 4, 7)), **other);
      if (!failures.check(y, "upload")) return;
      if (!failures.check(device_->sync(**other), "sync")) return;
      Result<std::vector<std::byte>> read = device_->read(*y, **other);
      if (failures.check(read, "read") && to_u32(*read) != iota_u32(size / 4, 7)) {
        failures.add("read back wrong bytes");
      }
    }
  });
  worker.join();
  ASSERT_THAT(failures.list(), IsEmpty());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk()) << "the other thread's calls must not have invalidated the recording";
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(x), iota_u32(kN, 2));
}

class ThreadsTest : public DeviceFixture {};

TEST_F(ThreadsTest, ReplaysOfDifferentGraphsFromSeveralThreads) {
  constexpr std::uint32_t kN = 96;
  constexpr int kRounds = 20;
  std::vector<Stream*> streams;
  std::vector<Buffer> buffers;
  std::vector<Graph> graphs;
  for (int t = 0; t < kThreads; ++t) {
    Result<Stream*> stream = device_->create_stream();
    ASSERT_THAT(stream, IsOk());
    streams.push_back(*stream);
    Buffer x = upload_u32(iota_u32(kN, 100 * t), **stream);
    ASSERT_THAT(device_->prepare_capture(**stream), IsOk());
    ASSERT_THAT(add_one(x, x, kN, **stream), IsOk());
    ASSERT_THAT(device_->begin_capture(**stream), IsOk());
    for (int i = 0; i <= t; ++i) ASSERT_THAT(add_one(x, x, kN, **stream), IsOk());  // t+1 nodes
    Result<Graph> graph = device_->end_capture(**stream);
    ASSERT_THAT(graph, IsOk());
    graphs.push_back(std::move(*graph));
    buffers.push_back(x);
  }
  ThreadFailures failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Stream& s = *streams[t];
      std::uint32_t expected_offset = 100 * t + 1;  // after the warm-up
      for (int round = 0; round < kRounds; ++round) {
        if (!failures.check(graphs[t].replay(), "replay")) return;
        expected_offset += t + 1;
        if (round % 5 == 4) {
          Result<std::vector<std::byte>> read = device_->read(buffers[t], s);
          if (!failures.check(read, "read")) return;
          if (to_u32(*read) != iota_u32(kN, expected_offset)) {
            failures.add("thread " + std::to_string(t) + " round " + std::to_string(round) +
                         ": wrong bytes");
          }
          // Rewrite the input between replays.
          expected_offset = 5000 + t;
          if (!failures.check(device_->write(buffers[t], to_bytes(iota_u32(kN, expected_offset)), s),
                              "write")) {
            return;
          }
        }
      }
      if (!failures.check(device_->sync(s), "sync")) return;
      if (!failures.check(graphs[t].destroy(), "destroy")) return;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(failures.list(), IsEmpty());
}

// Device::stream() takes no lock (it is on every launch of the default stream): it must stay
// the same stream, and race with nothing, while other threads create streams (which grows the
// device's list of them).
TEST_F(ThreadsTest, TheDefaultStreamIsReadWhileOtherThreadsCreateStreams) {
  Stream* const first = &device_->stream();
  ThreadFailures failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        if (t % 2 == 0) {
          if (!failures.check(device_->create_stream(), "create_stream")) return;
        } else if (&device_->stream() != first) {
          failures.add("thread " + std::to_string(t) + ": another default stream");
          return;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(failures.list(), IsEmpty());
  EXPECT_EQ(&device_->stream(), first);
  EXPECT_THAT(device_->launch(device_->stream(), empty_, dims_for(1), {}), IsOk());
  EXPECT_THAT(device_->sync(device_->stream()), IsOk());
}

TEST_F(ThreadsTest, BuffersDroppedFromOtherThreadsWhileTheOwnerWorks) {
  constexpr std::uint32_t kN = 256;
  constexpr int kBatches = 12;
  constexpr int kPerBatch = 8;
  Buffer acc = upload_u32(std::vector<std::uint32_t>(kN, 0));
  std::uint32_t expected = 0;
  ThreadFailures failures;
  std::vector<std::thread> droppers;
  for (int batch = 0; batch < kBatches; ++batch) {
    std::vector<Buffer> handed;
    for (int i = 0; i < kPerBatch; ++i) {
      Result<Buffer> scratch = device_->alloc(kN * 4, stream());
      ASSERT_THAT(scratch, IsOk());
      ASSERT_THAT(fill(*scratch, static_cast<std::uint32_t>(i), kN), IsOk());
      ASSERT_THAT(device_->launch(stream(), copy_, dims_for(kN),
                                  {Arg::in(*scratch), Arg::out(acc), Arg::value(kN)}),
                  IsOk());
      ASSERT_THAT(add_one(acc, acc, kN), IsOk());
      expected = static_cast<std::uint32_t>(i) + 1;
      handed.push_back(*scratch);  // the last handles go to another thread
    }
    droppers.emplace_back([batch_handles = std::move(handed)]() mutable {
      while (!batch_handles.empty()) batch_handles.pop_back();  // drops, on this thread
    });
    // Meanwhile the owner keeps allocating (reusing what the drops release) and reading.
    if (batch % 3 == 2) {
      Result<std::vector<std::byte>> read = device_->read(acc, stream());
      ASSERT_THAT(read, IsOk());
      EXPECT_EQ(to_u32(*read), std::vector<std::uint32_t>(kN, expected));
    }
  }
  for (std::thread& dropper : droppers) dropper.join();
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_EQ(read_u32(acc), std::vector<std::uint32_t>(kN, expected));
  EXPECT_THAT(fake()->violations(), IsEmpty()) << "a dropped slice was reused while still in use";
  EXPECT_THAT(failures.list(), IsEmpty());
}

TEST_F(ThreadsTest, GraphsAndBuffersDroppedFromAnotherThreadDuringAGlobalRecording) {
  constexpr std::uint32_t kN = 64;
  Buffer x = upload_u32(iota_u32(kN));
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  Buffer y = upload_u32(iota_u32(kN, 50), **other);
  // A graph on the other stream, to be destroyed from a worker while this thread records.
  ASSERT_THAT(device_->prepare_capture(**other), IsOk());
  ASSERT_THAT(device_->begin_capture(**other), IsOk());
  ASSERT_THAT(add_one(y, y, kN, **other), IsOk());
  Result<Graph> doomed_to_go = device_->end_capture(**other);
  ASSERT_THAT(doomed_to_go, IsOk());
  ASSERT_THAT(doomed_to_go->replay(), IsOk());

  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  Result<Buffer> tmp = device_->alloc(kN * 4, stream());
  ASSERT_THAT(tmp, IsOk());
  ASSERT_THAT(add_one(x, *tmp, kN), IsOk());
  ASSERT_THAT(add_one(*tmp, x, kN), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, *tmp, kN), IsOk());
  ASSERT_THAT(add_one(*tmp, x, kN), IsOk());
  // In global mode a worker's destroy and drops must not invalidate the recording: the graph's
  // wait is deferred, the drops wait in the queue.
  std::thread worker([graph = std::move(*doomed_to_go), last = std::move(*tmp), y]() mutable {
    (void)graph.destroy();
    last = Buffer{};
    y = Buffer{};
  });
  worker.join();
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(x), iota_u32(kN, 4));
  ASSERT_THAT(device_->sync(**other), IsOk());
}

}  // namespace
}  // namespace graphcap::testing
