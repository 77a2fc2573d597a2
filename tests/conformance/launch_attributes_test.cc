// cuLaunchKernelEx's attributes graphcap uses (docs/cuda-driver-facts.md, "Programmatic dependent
// launch and priorities"): PROGRAMMATIC_STREAM_SERIALIZATION, which stream capture turns into a
// programmatic edge from a kernel predecessor, and PRIORITY, which captured nodes carry. Each
// test is a row measured on the H200 by docs/measurements/probes/pdl_probe.cu (its case in
// brackets).
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include <graphcap/driver/launch_config.h>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

struct Edge {
  CUgraphNodeType from;
  CUgraphNodeType to;
  unsigned type;
  unsigned from_port;
  unsigned to_port;
  friend bool operator==(const Edge&, const Edge&) = default;
};
void PrintTo(const Edge& e, std::ostream* os) {
  *os << "(" << e.from << "->" << e.to << " type " << e.type << " ports " << e.from_port << "/"
      << e.to_port << ")";
}

constexpr unsigned kN = 256;

class LaunchAttributes : public KernelsTest {
 protected:
  void SetUp() override {
    KernelsTest::SetUp();
    if (HasFatalFailure()) return;
    words_ = alloc(5 * kN * sizeof(std::uint32_t));
    s2_ = new_stream();
    ASSERT_FALSE(HasFailure());
  }
  void TearDown() override {
    s2_.reset();
    words_.reset();
    KernelsTest::TearDown();
  }

  CUdeviceptr buffer(unsigned i) const { return words_.get() + i * kN * sizeof(std::uint32_t); }

  // pdl_add_one(buffer(i) -> buffer(i + 1)), through cuLaunchKernelEx with the attributes asked.
  CUresult step(CUstream stream, unsigned i, bool programmatic,
                std::optional<int> priority = std::nullopt, std::uint32_t wait = 1) {
    CUdeviceptr src = buffer(i);
    CUdeviceptr dst = buffer(i + 1);
    std::uint32_t n = kN;
    void* params[] = {&src, &dst, &n, &wait};
    LaunchAttributeList attributes;
    if (programmatic) attributes.programmatic();
    if (priority) attributes.priority(*priority);
    CUlaunchConfig config = launch_config(LaunchDims{.grid = {kGrid}, .block = {kBlock}}, stream, &attributes);
    return api().cuLaunchKernelEx(&config, pdl_add_one_, params, nullptr);
  }

  std::vector<Edge> edges(CUgraph graph) {
    std::size_t count = 0;
    EXPECT_EQ(api().cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &count), CUDA_SUCCESS);
    std::vector<CUgraphNode> from(count), to(count);
    std::vector<CUgraphEdgeData> data(count);
    EXPECT_EQ(api().cuGraphGetEdges(graph, from.data(), to.data(), data.data(), &count),
              CUDA_SUCCESS);
    std::vector<Edge> out;
    for (std::size_t i = 0; i < count; ++i) {
      Edge edge{};
      EXPECT_EQ(api().cuGraphNodeGetType(from[i], &edge.from), CUDA_SUCCESS);
      EXPECT_EQ(api().cuGraphNodeGetType(to[i], &edge.to), CUDA_SUCCESS);
      edge.type = data[i].type;
      edge.from_port = data[i].from_port;
      edge.to_port = data[i].to_port;
      out.push_back(edge);
    }
    return out;
  }

  // buffer 0 = 0..n-1, the rest zero.
  void reset() {
    std::vector<std::uint32_t> words(5 * kN, 0);
    for (unsigned i = 0; i < kN; ++i) words[i] = i;
    upload(words_.get(), words, s_.get());
  }
  // buffer(i) holds 0..n-1 plus i.
  void expect_chain(unsigned i) {
    EXPECT_EQ(download(buffer(i), kN, s_.get()), iota(kN, i)) << "buffer " << i;
  }

  DeviceMemory words_;
  RawStream s2_;
};

constexpr Edge kProgrammatic{CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_KERNEL,
                             CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC,
                             kGraphKernelNodePortProgrammatic, 0};

TEST_F(LaunchAttributes, ACapturedProgrammaticLaunchIsAProgrammaticEdgeFromItsKernel) {  // P01
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(step(s_.get(), 0, false), CUDA_SUCCESS);
    for (unsigned i = 1; i < 4; ++i) EXPECT_EQ(step(s_.get(), i, true), CUDA_SUCCESS);
  });
  EXPECT_EQ(edges(graph.get()), (std::vector<Edge>(3, kProgrammatic)));
  Exec exec = instantiate(graph.get());
  for (int replay = 0; replay < 2; ++replay) {
    reset();
    ASSERT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
    expect_chain(4);
  }
}

TEST_F(LaunchAttributes, AfterAMemsetTheEdgeIsOrdinaryAndAnEventHopKeepsItProgrammatic) {  // P01b
  RawEvent fork = new_event();
  RawEvent join = new_event();
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemsetD32Async(buffer(1), 0, kN, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(step(s_.get(), 0, true), CUDA_SUCCESS);
    EXPECT_EQ(api().cuEventRecord(fork.get(), s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamWaitEvent(s2_.get(), fork.get(), 0), CUDA_SUCCESS);
    EXPECT_EQ(step(s2_.get(), 1, true), CUDA_SUCCESS);
    EXPECT_EQ(api().cuEventRecord(join.get(), s2_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamWaitEvent(s_.get(), join.get(), 0), CUDA_SUCCESS);
  });
  const Edge ordinary{CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_KERNEL, 0, 0, 0};
  // (cuGraphGetEdges lists edges in an order cuda.h does not promise.)
  EXPECT_THAT(edges(graph.get()), ::testing::UnorderedElementsAre(ordinary, kProgrammatic));
  Exec exec = instantiate(graph.get());
  reset();
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  expect_chain(2);
}

TEST_F(LaunchAttributes, ReadingProgrammaticEdgesWithoutEdgeDataIsALossyQuery) {
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(step(s_.get(), 0, false), CUDA_SUCCESS);
    EXPECT_EQ(step(s_.get(), 1, true), CUDA_SUCCESS);
  });
  std::size_t count = 1;
  CUgraphNode from = nullptr;
  CUgraphNode to = nullptr;
  // cuda.h: edge data may be NULL only when every edge is a default one.
  EXPECT_EQ(api().cuGraphGetEdges(graph.get(), &from, &to, nullptr, &count),
            CUDA_ERROR_LOSSY_QUERY);
}

TEST_F(LaunchAttributes, AProgrammaticLaunchThatWaitsSeesItsPredecessorsWrites) {  // P03.c
  // Eagerly, and replayed: each kernel lets the next begin at once and waits before it reads.
  reset();
  EXPECT_EQ(step(s_.get(), 0, false), CUDA_SUCCESS);
  for (unsigned i = 1; i < 4; ++i) EXPECT_EQ(step(s_.get(), i, true), CUDA_SUCCESS);
  expect_chain(4);
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(step(s_.get(), 0, false), CUDA_SUCCESS);
    for (unsigned i = 1; i < 4; ++i) EXPECT_EQ(step(s_.get(), i, true), CUDA_SUCCESS);
  });
  Exec exec = instantiate(graph.get());
  reset();
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  expect_chain(4);
}

TEST_F(LaunchAttributes, ExecUpdateBetweenAPlainAndAProgrammaticChainIsTopologyChanged) {  // P06
  auto chain = [&](bool programmatic) {
    return capture(s_.get(), [&] {
      EXPECT_EQ(step(s_.get(), 0, false), CUDA_SUCCESS);
      for (unsigned i = 1; i < 4; ++i) EXPECT_EQ(step(s_.get(), i, programmatic), CUDA_SUCCESS);
    });
  };
  RawGraph plain = chain(false);
  RawGraph programmatic = chain(true);
  Exec from_plain = instantiate(plain.get());
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(api().cuGraphExecUpdate(from_plain.get(), programmatic.get(), &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  Exec from_programmatic = instantiate(programmatic.get());
  info = CUgraphExecUpdateResultInfo{};
  EXPECT_EQ(api().cuGraphExecUpdate(from_programmatic.get(), plain.get(), &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
}

TEST_F(LaunchAttributes, TheStreamPriorityRangeIsZeroToMinusFive) {  // P04
  int least = 99;
  int greatest = 99;
  EXPECT_EQ(api().cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_SUCCESS);
  EXPECT_EQ(least, 0);
  EXPECT_EQ(greatest, -5);
}

TEST_F(LaunchAttributes, EagerLaunchesAcceptAnyPriority) {  // P04
  reset();
  for (int priority : {-5, -15, 10}) {
    EXPECT_EQ(step(s_.get(), 0, false, priority), CUDA_SUCCESS) << "priority " << priority;
  }
  expect_chain(1);
}

TEST_F(LaunchAttributes, CapturedNodesCarryTheirLaunchsPriorityClampedToTheRange) {  // P04
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(step(s_.get(), 0, false, -5), CUDA_SUCCESS);
    EXPECT_EQ(step(s_.get(), 1, false), CUDA_SUCCESS);
    EXPECT_EQ(step(s_.get(), 2, false, -15), CUDA_SUCCESS);
  });
  std::size_t count = 3;
  std::vector<CUgraphNode> nodes(count);
  ASSERT_EQ(api().cuGraphGetNodes(graph.get(), nodes.data(), &count), CUDA_SUCCESS);
  std::vector<int> priorities;
  for (CUgraphNode node : nodes) {
    CUlaunchAttributeValue value;
    std::memset(&value, 0x7f, sizeof value);
    EXPECT_EQ(api().cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value),
              CUDA_SUCCESS);
    priorities.push_back(value.priority);
  }
  EXPECT_EQ(priorities, (std::vector<int>{-5, 0, -5}));
  // Both flags instantiate; node priorities need none to instantiate.
  Exec plain = instantiate(graph.get());
  Exec prioritized = instantiate(graph.get(), CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
  reset();
  ASSERT_EQ(api().cuGraphLaunch(prioritized.get(), s_.get()), CUDA_SUCCESS);
  expect_chain(3);
}

TEST_F(LaunchAttributes, ExecUpdateToAnotherPriorityIsAttributesChanged) {  // P04
  auto record = [&](int priority) {
    return capture(s_.get(), [&] { EXPECT_EQ(step(s_.get(), 0, false, priority), CUDA_SUCCESS); });
  };
  RawGraph high = record(-5);
  RawGraph low = record(0);
  Exec exec = instantiate(high.get(), CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), low.get(), &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED);
}

}  // namespace
}  // namespace graphcap::testing
