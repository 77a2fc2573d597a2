// param_holds: which values Graph::set accepts for a Param<T> (exactly representable in T).
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include <graphcap/param.h>

namespace graphcap {
namespace {

TEST(ParamHolds, IntegersInRangeOnly) {
  EXPECT_TRUE(param_holds<std::uint32_t>(0));
  EXPECT_TRUE(param_holds<std::uint32_t>(std::int64_t{4294967295}));
  EXPECT_FALSE(param_holds<std::uint32_t>(std::int64_t{4294967296}));
  EXPECT_FALSE(param_holds<std::uint32_t>(-1));
  EXPECT_TRUE(param_holds<std::int8_t>(-128));
  EXPECT_FALSE(param_holds<std::int8_t>(128));
  EXPECT_TRUE(param_holds<std::int64_t>(std::numeric_limits<std::uint32_t>::max()));
  EXPECT_FALSE(param_holds<std::int64_t>(std::numeric_limits<std::uint64_t>::max()));
}

TEST(ParamHolds, FloatingPointIntoIntegersOnlyWhenWhole) {
  EXPECT_TRUE(param_holds<std::uint32_t>(7.0));
  EXPECT_FALSE(param_holds<std::uint32_t>(7.5));
  EXPECT_FALSE(param_holds<std::uint32_t>(-1.0));
  EXPECT_FALSE(param_holds<std::uint32_t>(4294967296.0));
  EXPECT_TRUE(param_holds<std::uint32_t>(4294967295.0));
  EXPECT_FALSE(param_holds<std::int32_t>(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(param_holds<std::int32_t>(std::numeric_limits<double>::infinity()));
}

TEST(ParamHolds, IntoFloatingPointWhenExact) {
  EXPECT_TRUE(param_holds<float>(0.5));
  EXPECT_FALSE(param_holds<float>(0.1));  // 0.1 as a double is not a float
  EXPECT_TRUE(param_holds<float>(16777216));
  EXPECT_FALSE(param_holds<float>(16777217));
  EXPECT_TRUE(param_holds<double>(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(param_holds<float>(std::numeric_limits<double>::infinity()));
}

TEST(ParamHolds, BoolOnlyFromBool) {
  EXPECT_TRUE(param_holds<bool>(true));
  EXPECT_FALSE(param_holds<bool>(1));
  EXPECT_FALSE(param_holds<int>(true));
}

}  // namespace
}  // namespace graphcap
