// Facts file, "Names, versions, values", instantiate flags: cuGraphInstantiateWithFlags with
// UPLOAD (2, valid only with ...WithParams), AUTO_FREE_ON_LAUNCH|DEVICE_LAUNCH (5) or an unknown
// bit returns 1; no flags and AUTO_FREE_ON_LAUNCH alone instantiate.
#include <string>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

struct FlagsCase {
  const char* name;
  unsigned long long flags;
  CUresult expected;
};

class InstantiateFlags : public ConformanceTest, public ::testing::WithParamInterface<FlagsCase> {};

TEST_P(InstantiateFlags, OfAOneKernelGraph) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  RawGraph graph = capture(s.get(), [&] { EXPECT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS); });
  ASSERT_TRUE(graph);

  CUgraphExec raw = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&raw, graph.get(), GetParam().flags),
            GetParam().expected);
  Exec exec(api(), raw);
  if (GetParam().expected == CUDA_SUCCESS) {
    ASSERT_TRUE(exec);
    EXPECT_EQ(api().cuGraphLaunch(exec.get(), s.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s.get()), CUDA_SUCCESS);
  }
}

INSTANTIATE_TEST_SUITE_P(
    InstantiateFlags, InstantiateFlags,
    ::testing::Values(
        FlagsCase{"none", 0, CUDA_SUCCESS},
        FlagsCase{"auto_free_on_launch", CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
                  CUDA_SUCCESS},
        FlagsCase{"upload", CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, CUDA_ERROR_INVALID_VALUE},
        FlagsCase{"auto_free_and_device_launch",
                  CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                      CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH,
                  CUDA_ERROR_INVALID_VALUE},
        FlagsCase{"unknown_bit_16", 16, CUDA_ERROR_INVALID_VALUE},
        FlagsCase{"unknown_bit_63", 1ull << 63, CUDA_ERROR_INVALID_VALUE}),
    [](const ::testing::TestParamInfo<FlagsCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace graphcap::testing
