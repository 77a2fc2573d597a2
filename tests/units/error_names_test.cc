// Names of exec-update results and node types, as GraphReport::update_refusal uses them.
#include <gtest/gtest.h>

#include <graphcap/driver/error_names.h>

namespace graphcap {
namespace {

TEST(ExecUpdateResultName, EveryResultHasCudaHsName) {
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_SUCCESS), "CU_GRAPH_EXEC_UPDATE_SUCCESS");
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_ERROR), "CU_GRAPH_EXEC_UPDATE_ERROR");
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED),
            "CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED");
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED),
            "CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED");
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED),
            "CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED");
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED),
            "CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED");
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED),
            "CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED");
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE),
            "CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE");
  EXPECT_EQ(exec_update_result_name(CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED),
            "CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED");
  EXPECT_EQ(exec_update_result_name(static_cast<CUgraphExecUpdateResult>(42)),
            "CUgraphExecUpdateResult 42");
}

TEST(NodeTypeName, NamesCudaHsTypesAndOnlyThose) {
  EXPECT_STREQ(node_type_name(CU_GRAPH_NODE_TYPE_KERNEL), "KERNEL");
  EXPECT_STREQ(node_type_name(CU_GRAPH_NODE_TYPE_MEMCPY), "MEMCPY");
  EXPECT_STREQ(node_type_name(CU_GRAPH_NODE_TYPE_MEM_FREE), "MEM_FREE");
  EXPECT_STREQ(node_type_name(CU_GRAPH_NODE_TYPE_CONDITIONAL), "CONDITIONAL");
  EXPECT_STREQ(node_type_name(static_cast<CUgraphNodeType>(14)), "?");
  EXPECT_STREQ(node_type_name(static_cast<CUgraphNodeType>(-1)), "?");
}

}  // namespace
}  // namespace graphcap
