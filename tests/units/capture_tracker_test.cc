// CaptureTracker: which threads may make unsafe calls while recordings are open, by CUDA's rule
// (docs/cuda-driver-facts.md, "What invalidates a capture"), and the in-flight handshake that
// keeps a GLOBAL recording from opening under another thread's unsafe call.
#include <graphcap/capture/capture_tracker.h>

#include <atomic>
#include <future>
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
  CaptureTracker::Registration recording =
      tracker_->register_recording(CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_TRUE(tracker_->unsafe_calls_forbidden());
  EXPECT_TRUE(forbidden_elsewhere());
  EXPECT_FALSE(on_other_thread([&] { return bool(tracker_->enter_unsafe_call()); }));
  recording.release();
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
  EXPECT_FALSE(forbidden_elsewhere());
}

TEST_F(CaptureTrackerTest, AThreadLocalRecordingForbidsOnlyItsOwnThread) {
  CaptureTracker::Registration recording =
      tracker_->register_recording(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  EXPECT_TRUE(tracker_->unsafe_calls_forbidden());
  EXPECT_FALSE(forbidden_elsewhere());
  recording.release();
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
}

TEST_F(CaptureTrackerTest, ARelaxedRecordingForbidsNobody) {
  CaptureTracker::Registration recording =
      tracker_->register_recording(CU_STREAM_CAPTURE_MODE_RELAXED);
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
  EXPECT_FALSE(forbidden_elsewhere());
}

TEST_F(CaptureTrackerTest, ARecordingEndedByAnotherThreadFreesTheThreadThatBeganIt) {
  // A device closed, or a recording aborted, from another thread: the count that drops is the
  // recording thread's, not the closing thread's.
  CaptureTracker::Registration recording =
      tracker_->register_recording(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  std::thread([&] {
    recording.release();
    EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
  }).join();
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
}

TEST_F(CaptureTrackerTest, ARegistrationIsReleasedExactlyOnce) {
  // Ending a recording twice (from a side stream, then from its origin) released it
  // twice, and the count of GLOBAL recordings went below zero: from then on a GLOBAL recording
  // no longer forbade other threads' unsafe calls.
  CaptureTracker::Registration first = tracker_->register_recording(CU_STREAM_CAPTURE_MODE_GLOBAL);
  first.release();
  first.release();
  { CaptureTracker::Registration moved = std::move(first); }
  CaptureTracker::Registration second = tracker_->register_recording(CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_TRUE(forbidden_elsewhere());
}

TEST_F(CaptureTrackerTest, TwoRecordingsOfOneThreadForbidUntilBothEnd) {
  CaptureTracker::Registration local =
      tracker_->register_recording(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  CaptureTracker::Registration global = tracker_->register_recording(CU_STREAM_CAPTURE_MODE_GLOBAL);
  global.release();
  EXPECT_TRUE(tracker_->unsafe_calls_forbidden());
  EXPECT_FALSE(forbidden_elsewhere());
  local.release();
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
}

TEST_F(CaptureTrackerTest, ClosingARecordingIsForbiddenOnlyByTheOtherOpenOnes) {
  // Instantiating while another GLOBAL recording is open (or another of this thread's) would
  // invalidate that one; the recording being closed does not count.
  CaptureTracker::Registration own = tracker_->register_recording(CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_FALSE(tracker_->enter_unsafe_call());
  EXPECT_TRUE(tracker_->enter_unsafe_call_beside(own));
  CaptureTracker::Registration local =
      tracker_->register_recording(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  EXPECT_FALSE(tracker_->enter_unsafe_call_beside(own)) << "another recording of this thread";
  EXPECT_FALSE(tracker_->enter_unsafe_call_beside(local)) << "the GLOBAL one is still open";
  local.release();
  // Another thread's GLOBAL recording forbids closing a thread_local one here.
  own.release();
  CaptureTracker::Registration mine =
      tracker_->register_recording(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  std::promise<void> opened, done;
  std::thread other([&] {
    CaptureTracker::Registration theirs =
        tracker_->register_recording(CU_STREAM_CAPTURE_MODE_GLOBAL);
    opened.set_value();
    done.get_future().wait();
  });
  opened.get_future().wait();
  EXPECT_FALSE(tracker_->enter_unsafe_call_beside(mine));
  done.set_value();
  other.join();
  EXPECT_TRUE(tracker_->enter_unsafe_call_beside(mine));
}

TEST_F(CaptureTrackerTest, AGlobalRecordingOpensOnlyAfterTheUnsafeCallsInFlightReturn) {
  std::atomic<bool> opened{false};
  std::atomic<bool> call_returned{false};
  std::thread recorder;
  {
    CaptureTracker::UnsafeCall call = tracker_->enter_unsafe_call();  // in flight on this thread
    ASSERT_TRUE(call);
    recorder = std::thread([&] {
      CaptureTracker::Registration recording =
          tracker_->register_recording(CU_STREAM_CAPTURE_MODE_GLOBAL);
      // Had it opened under the call, the call would have invalidated it.
      EXPECT_TRUE(call_returned.load());
      opened = true;
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
