// CaptureTracker: which threads may make unsafe calls while recordings are open, by CUDA's rule
// (docs/cuda-driver-facts.md, "What invalidates a capture"), and the in-flight handshake that
// keeps a GLOBAL recording from opening under another thread's unsafe call.
#include <graphcap/capture/capture_tracker.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

namespace graphcap::capture {
namespace {

// Runs `f` on a new thread and returns its result.
template <class F>
auto on_other_thread(F f) {
  decltype(f()) result{};
  std::thread([&] { result = f(); }).join();
  return result;
}

class CaptureTrackerTest : public ::testing::Test {
 protected:
  fake::FakeDriver fake_;
  std::shared_ptr<CaptureTracker> tracker_ = CaptureTracker::for_driver(fake_);
  bool forbidden_elsewhere() {
    return on_other_thread([&] { return tracker_->unsafe_calls_forbidden(); });
  }
};

TEST_F(CaptureTrackerTest, OneTrackerPerDriver) {
  EXPECT_EQ(CaptureTracker::for_driver(fake_), tracker_);
  fake::FakeDriver other;
  EXPECT_NE(CaptureTracker::for_driver(other), tracker_);
}

TEST_F(CaptureTrackerTest, NothingIsForbiddenWithoutRecordings) {
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
  CaptureTracker::UnsafeCall call = tracker_->enter_unsafe_call();
  EXPECT_TRUE(call);
}

TEST_F(CaptureTrackerTest, AGlobalRecordingForbidsEveryThread) {
  tracker_->recording_started(CU_STREAM_CAPTURE_MODE_GLOBAL, std::this_thread::get_id());
  EXPECT_TRUE(tracker_->unsafe_calls_forbidden());
  EXPECT_TRUE(forbidden_elsewhere());
  EXPECT_FALSE(on_other_thread([&] { return bool(tracker_->enter_unsafe_call()); }));
  tracker_->recording_ended(CU_STREAM_CAPTURE_MODE_GLOBAL, std::this_thread::get_id());
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
  EXPECT_FALSE(forbidden_elsewhere());
}

TEST_F(CaptureTrackerTest, AThreadLocalRecordingForbidsOnlyItsOwnThread) {
  tracker_->recording_started(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, std::this_thread::get_id());
  EXPECT_TRUE(tracker_->unsafe_calls_forbidden());
  EXPECT_FALSE(forbidden_elsewhere());
  tracker_->recording_ended(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, std::this_thread::get_id());
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
}

TEST_F(CaptureTrackerTest, ARelaxedRecordingForbidsNobody) {
  tracker_->recording_started(CU_STREAM_CAPTURE_MODE_RELAXED, std::this_thread::get_id());
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
  EXPECT_FALSE(forbidden_elsewhere());
  tracker_->recording_ended(CU_STREAM_CAPTURE_MODE_RELAXED, std::this_thread::get_id());
}

TEST_F(CaptureTrackerTest, ARecordingEndedByAnotherThreadFreesTheThreadThatBeganIt) {
  // A device closed, or a recording aborted, from another thread: the count that drops is the
  // recording thread's, not the closing thread's.
  const std::thread::id me = std::this_thread::get_id();
  tracker_->recording_started(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, me);
  std::thread([&] {
    tracker_->recording_ended(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, me);
    EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
  }).join();
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
}

TEST_F(CaptureTrackerTest, TwoRecordingsOfOneThreadForbidUntilBothEnd) {
  const std::thread::id me = std::this_thread::get_id();
  tracker_->recording_started(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, me);
  tracker_->recording_started(CU_STREAM_CAPTURE_MODE_GLOBAL, me);
  tracker_->recording_ended(CU_STREAM_CAPTURE_MODE_GLOBAL, me);
  EXPECT_TRUE(tracker_->unsafe_calls_forbidden());
  EXPECT_FALSE(forbidden_elsewhere());
  tracker_->recording_ended(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, me);
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
}

TEST_F(CaptureTrackerTest, AGlobalRecordingOpensOnlyAfterTheUnsafeCallsInFlightReturn) {
  std::atomic<bool> opened{false};
  std::atomic<bool> call_returned{false};
  std::thread recorder;
  {
    CaptureTracker::UnsafeCall call = tracker_->enter_unsafe_call();  // in flight on this thread
    ASSERT_TRUE(call);
    recorder = std::thread([&] {
      tracker_->recording_started(CU_STREAM_CAPTURE_MODE_GLOBAL, std::this_thread::get_id());
      // Had it opened under the call, the call would have invalidated it.
      EXPECT_TRUE(call_returned.load());
      opened = true;
      tracker_->recording_ended(CU_STREAM_CAPTURE_MODE_GLOBAL, std::this_thread::get_id());
    });
    // Wait until the recording is announced: from then on new unsafe calls are refused, though
    // the one in flight goes on.
    while (!tracker_->unsafe_calls_forbidden() && !opened.load()) std::this_thread::yield();
    EXPECT_FALSE(opened.load());
    EXPECT_FALSE(on_other_thread([&] { return bool(tracker_->enter_unsafe_call()); }));
    call_returned = true;
  }
  recorder.join();
  EXPECT_TRUE(opened.load());
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
}

}  // namespace
}  // namespace graphcap::capture
