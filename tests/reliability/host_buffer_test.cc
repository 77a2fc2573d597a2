// The random models' host model of a buffer (model/host_buffer.h) finds what it must: a known word
// read back wrong, named by its index and both values, from any offset; never a word it does not
// know (fresh, forgotten, or copied from a buffer an injected fault left unsure).
#include "model/host_buffer.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace graphcap::testing::model {
namespace {

using ::testing::Optional;

TEST(HostBufferTest, AKnownWordReadBackWrongIsNamedWithBothValues) {
  HostBuffer buffer(4);
  buffer.fill(7);
  std::vector<std::uint32_t> got{7, 7, 9, 7};
  EXPECT_THAT(buffer.first_mismatch(got, 0), Optional(2u));
  EXPECT_THAT(buffer.mismatch(got, 0, "buffer 3"),
              Optional(std::string("buffer 3 element 2 holds 9, the model says 7")));
  got[2] = 7;
  EXPECT_EQ(buffer.first_mismatch(got, 0), std::nullopt);
  EXPECT_EQ(buffer.known_count(0, 4), 4u);
  EXPECT_TRUE(buffer.all_known());
}

TEST(HostBufferTest, WordsReadFromAnOffsetAreComparedWithTheWordsThere) {
  HostBuffer buffer(4);
  const std::vector<std::uint32_t> words{1, 2, 3, 4};
  buffer.write_words(0, words);
  EXPECT_EQ(buffer.first_mismatch(std::vector<std::uint32_t>{3, 4}, 2), std::nullopt);
  EXPECT_THAT(buffer.mismatch(std::vector<std::uint32_t>{3, 5}, 2, "b"),
              Optional(std::string("b element 3 holds 5, the model says 4")));
  // Words beyond the buffer are not compared.
  EXPECT_EQ(buffer.first_mismatch(std::vector<std::uint32_t>{4, 99}, 3), std::nullopt);
  EXPECT_EQ(buffer.first_mismatch(std::vector<std::uint32_t>{99}, 4), std::nullopt);
}

TEST(HostBufferTest, WordsItDoesNotKnowNeverMismatch) {
  HostBuffer fresh(3);
  EXPECT_FALSE(fresh.all_known());
  EXPECT_EQ(fresh.known_count(0, 3), 0u);
  EXPECT_EQ(fresh.first_mismatch(std::vector<std::uint32_t>{5, 6, 7}, 0), std::nullopt);

  HostBuffer part(3);
  part.write_words(1, std::vector<std::uint32_t>{8});
  EXPECT_EQ(part.known_count(0, 3), 1u);
  EXPECT_EQ(part.first_mismatch(std::vector<std::uint32_t>{0, 8, 0}, 0), std::nullopt);
  EXPECT_THAT(part.first_mismatch(std::vector<std::uint32_t>{0, 9, 0}, 0), Optional(1u));

  HostBuffer unsure(3);
  unsure.fill(1);
  unsure.forget();  // an injected fault: nothing known, a read may give anything
  HostBuffer copied(3);
  copied.assign(unsure, 1);
  EXPECT_EQ(copied.known_count(0, 3), 0u);
  EXPECT_EQ(copied.first_mismatch(std::vector<std::uint32_t>{0, 0, 0}, 0), std::nullopt);

  HostBuffer sure(3);
  sure.fill(1);
  copied.assign(sure, 1);  // add_one of a known buffer: known, each word + 1
  EXPECT_THAT(copied.first_mismatch(std::vector<std::uint32_t>{2, 2, 1}, 0), Optional(2u));
}

}  // namespace
}  // namespace graphcap::testing::model
