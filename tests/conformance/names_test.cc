// Facts file, "Names, versions, values": the numeric values graphcap mirrors, the error names and
// strings the driver reports, the driver's version, and the thread capture mode's starting value.
// (How names resolve through cuGetProcAddress_v2 is tested in tests/loader; that every mirrored
// value equals cuda.h's is proven at compile time by src/graphcap/driver/cuda_types_check.cc.)
#include <cstdint>
#include <set>
#include <string>
#include <thread>

#include <graphcap/driver/error_names.h>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

// The values docs/cuda-driver-facts.md lists ("Enum values"), checked here too so the fake build
// (no cuda.h) pins them.
static_assert(CU_STREAM_CAPTURE_MODE_GLOBAL == 0 && CU_STREAM_CAPTURE_MODE_THREAD_LOCAL == 1 &&
              CU_STREAM_CAPTURE_MODE_RELAXED == 2);
static_assert(CU_STREAM_CAPTURE_STATUS_NONE == 0 && CU_STREAM_CAPTURE_STATUS_ACTIVE == 1 &&
              CU_STREAM_CAPTURE_STATUS_INVALIDATED == 2);
static_assert(CU_GRAPH_NODE_TYPE_KERNEL == 0 && CU_GRAPH_NODE_TYPE_MEMCPY == 1 &&
              CU_GRAPH_NODE_TYPE_MEMSET == 2 && CU_GRAPH_NODE_TYPE_HOST == 3 &&
              CU_GRAPH_NODE_TYPE_GRAPH == 4 && CU_GRAPH_NODE_TYPE_EMPTY == 5 &&
              CU_GRAPH_NODE_TYPE_WAIT_EVENT == 6 && CU_GRAPH_NODE_TYPE_EVENT_RECORD == 7 &&
              CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL == 8 && CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT == 9 &&
              CU_GRAPH_NODE_TYPE_MEM_ALLOC == 10 && CU_GRAPH_NODE_TYPE_MEM_FREE == 11 &&
              CU_GRAPH_NODE_TYPE_BATCH_MEM_OP == 12 && CU_GRAPH_NODE_TYPE_CONDITIONAL == 13);
static_assert(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH == 1 &&
              CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD == 2 &&
              CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH == 4 &&
              CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY == 8);
static_assert(CU_GRAPH_EXEC_UPDATE_SUCCESS == 0 && CU_GRAPH_EXEC_UPDATE_ERROR == 1 &&
              CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED == 2 &&
              CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED == 3 &&
              CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED == 4 &&
              CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED == 5 &&
              CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED == 6 &&
              CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE == 7 &&
              CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED == 8);
static_assert(CUDA_SUCCESS == 0 && CUDA_ERROR_INVALID_VALUE == 1 &&
              CUDA_ERROR_OUT_OF_MEMORY == 2 && CUDA_ERROR_NOT_INITIALIZED == 3 &&
              CUDA_ERROR_INVALID_HANDLE == 400 && CUDA_ERROR_ILLEGAL_STATE == 401 &&
              CUDA_ERROR_NOT_PERMITTED == 800 && CUDA_ERROR_NOT_SUPPORTED == 801 &&
              CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED == 900 &&
              CUDA_ERROR_STREAM_CAPTURE_INVALIDATED == 901 &&
              CUDA_ERROR_STREAM_CAPTURE_MERGE == 902 &&
              CUDA_ERROR_STREAM_CAPTURE_UNMATCHED == 903 &&
              CUDA_ERROR_STREAM_CAPTURE_UNJOINED == 904 &&
              CUDA_ERROR_STREAM_CAPTURE_ISOLATION == 905 &&
              CUDA_ERROR_STREAM_CAPTURE_IMPLICIT == 906 && CUDA_ERROR_CAPTURED_EVENT == 907 &&
              CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD == 908 &&
              CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE == 910);
static_assert(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND == 1 &&
              CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT == 2);

using ErrorNames = ConformanceTest;

TEST_F(ErrorNames, GraphcapsTableIsWellFormed) {
  // The table both the fake and graphcap's messages answer from: one row per code, each named as
  // cuda.h spells its enumerators, each with a text.
  ASSERT_GT(known_cu_result_count(), 40u);
  std::set<int> codes;
  std::set<std::string> names;
  for (std::size_t i = 0; i < known_cu_result_count(); ++i) {
    const CUresult code = known_cu_result(i);
    SCOPED_TRACE(::testing::Message() << "CUresult " << static_cast<int>(code));
    EXPECT_TRUE(codes.insert(static_cast<int>(code)).second) << "listed twice";
    ASSERT_NE(cu_result_name(code), nullptr);
    const std::string name = cu_result_name(code);
    EXPECT_TRUE(name == "CUDA_SUCCESS" || name.starts_with("CUDA_ERROR_")) << name;
    EXPECT_TRUE(names.insert(name).second) << name << " names two codes";
    ASSERT_NE(cu_result_string(code), nullptr);
    EXPECT_STRNE(cu_result_string(code), "");
  }
}

TEST_F(ErrorNames, EveryKnownCodeHasGraphcapsNameAndString) {
  if (test_driver().is_fake()) {
    // The fake answers from graphcap's own table: comparing it with itself proves nothing. The
    // fake's answers are checked against the measured rows (FactsTableRowsAreKnownCodes).
    GTEST_SKIP() << "meaningful on a real driver only";
  }
  ASSERT_GT(known_cu_result_count(), 0u);
  for (std::size_t i = 0; i < known_cu_result_count(); ++i) {
    const CUresult code = known_cu_result(i);
    SCOPED_TRACE(::testing::Message() << "CUresult " << static_cast<int>(code));
    const char* name = nullptr;
    ASSERT_EQ(api().cuGetErrorName(code, &name), CUDA_SUCCESS);
    ASSERT_NE(name, nullptr);
    EXPECT_STREQ(name, cu_result_name(code));
    const char* text = nullptr;
    ASSERT_EQ(api().cuGetErrorString(code, &text), CUDA_SUCCESS);
    ASSERT_NE(text, nullptr);
    EXPECT_STREQ(text, cu_result_string(code));
  }
}

TEST_F(ErrorNames, FactsTableRowsAreKnownCodes) {
  // docs/cuda-driver-facts.md's "Error codes" table, row by row: name and string as measured.
  struct ErrorRow {
    CUresult code;
    const char* name;
    const char* text;
  };
  const ErrorRow rows[] = {
      {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
      {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
      {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
      {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
       "the operation cannot be performed in the present state"},
      {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
      {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
      {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
       "operation not permitted when stream is capturing"},
      {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
       "operation failed due to a previous error during capture"},
      {CUDA_ERROR_STREAM_CAPTURE_MERGE, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
       "operation would result in a merge of separate capture sequences"},
      {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
       "capture was not ended in the same stream as it began"},
      {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
       "capturing stream has unjoined work"},
      {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
       "dependency created on uncaptured work in another stream"},
      {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
       "operation would make the legacy stream depend on a capturing blocking stream"},
      {CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
       "operation not permitted on an event last recorded in a capturing stream"},
      {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
       "attempt to terminate a thread-local capture sequence from another thread"},
      {CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
       "the graph update was not performed because it included changes which violated "
       "constraints specific to instantiated graph update"},
  };
  for (const ErrorRow& row : rows) {
    SCOPED_TRACE(row.name);
    const char* name = nullptr;
    EXPECT_EQ(api().cuGetErrorName(row.code, &name), CUDA_SUCCESS);
    EXPECT_STREQ(name, row.name);
    const char* text = nullptr;
    EXPECT_EQ(api().cuGetErrorString(row.code, &text), CUDA_SUCCESS);
    EXPECT_STREQ(text, row.text);
  }
}

TEST_F(ErrorNames, UnknownCodeIsInvalidValueAndNull) {
  // Codes cuda.h does not define.
  for (const int unknown : {12345, 50, 1000}) {
    SCOPED_TRACE(unknown);
    const auto code = static_cast<CUresult>(unknown);
    ASSERT_EQ(cu_result_name(code), nullptr) << "not unknown to graphcap";
    const char* name = "sentinel";
    EXPECT_EQ(api().cuGetErrorName(code, &name), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(name, nullptr);
    // cuda.h documents the same for cuGetErrorString.
    const char* text = "sentinel";
    EXPECT_EQ(api().cuGetErrorString(code, &text), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(text, nullptr);
  }
}

using DriverVersion = ConformanceTest;

TEST_F(DriverVersion, IsCuda13OrNewer) {
  int version = 0;
  EXPECT_EQ(api().cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_GE(version, kCudaVersion);
}

using ThreadCaptureModes = ConformanceTest;

TEST_F(ThreadCaptureModes, ANewThreadStartsGlobal) {
  CUresult first = CUDA_ERROR_UNKNOWN;
  CUresult second = CUDA_ERROR_UNKNOWN;
  auto initial = static_cast<CUstreamCaptureMode>(-1);
  auto exchanged = static_cast<CUstreamCaptureMode>(-1);
  std::thread thread([&] {
    api().cuCtxSetCurrent(context());
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    first = api().cuThreadExchangeStreamCaptureMode(&mode);
    initial = mode;
    second = api().cuThreadExchangeStreamCaptureMode(&mode);  // back to where it was
    exchanged = mode;
  });
  thread.join();
  EXPECT_EQ(first, CUDA_SUCCESS);
  EXPECT_EQ(initial, CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_EQ(second, CUDA_SUCCESS);
  EXPECT_EQ(exchanged, CU_STREAM_CAPTURE_MODE_RELAXED);
}

TEST_F(ThreadCaptureModes, ExchangeReturnsThePreviousModeOfThisThread) {
  ThreadCaptureMode thread_local_mode(api(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  ASSERT_EQ(thread_local_mode.status(), CUDA_SUCCESS);
  EXPECT_EQ(thread_local_mode.previous(), CU_STREAM_CAPTURE_MODE_GLOBAL);
  {
    ThreadCaptureMode relaxed(api(), CU_STREAM_CAPTURE_MODE_RELAXED);
    EXPECT_EQ(relaxed.previous(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  }
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  EXPECT_EQ(api().cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) << "the inner scope restored it";
}

}  // namespace
}  // namespace graphcap::testing
