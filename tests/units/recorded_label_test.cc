// RecordedLabel: a label kept compact in a recording (its arguments in the recording's array)
// expands back into the label that was recorded, whatever its kind.
#include <graphcap/capture/recorded_label.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace graphcap::capture {
namespace {

std::string render_for_test(const OperationLabel& label) {
  std::string text = "op " + *label.name + " grid " + std::to_string(label.dims.grid.x) +
                     " n " + std::to_string(label.numbers[2]);
  for (const OperationLabel::BufferArg& arg : label.buffer_args()) {
    text += "\narg " + std::to_string(arg.index) + " " + std::to_string(arg.bytes) +
            (arg.label ? " " + *arg.label : std::string());
  }
  return text;
}

OperationLabel label_with_args(const std::string& name, std::uint32_t count) {
  OperationLabel label(&render_for_test);
  label.name = std::make_shared<const std::string>(name);
  label.dims.grid.x = 7;
  label.numbers[2] = 42;
  for (std::uint32_t i = 0; i < count; ++i) {
    OperationLabel::BufferArg arg;
    arg.index = i;
    arg.bytes = 100 + i;
    if (i % 2 == 0) arg.label = std::make_shared<const std::string>("buf" + std::to_string(i));
    label.add_buffer_arg(arg);
  }
  return label;
}

TEST(RecordedLabelTest, ExpandsToTheRecordedTextWithItsArgumentsFromTheSharedArray) {
  NodeStore store;
  // Three labels into one array: within the inline room, past it (spilled), and none.
  OperationLabel first = label_with_args("a", 3);
  OperationLabel second = label_with_args("b", 11);
  OperationLabel third = label_with_args("c", 0);
  const std::string first_text = first.text();
  const std::string second_text = second.text();
  const std::string third_text = third.text();
  RecordedLabel one(std::move(first), store);
  RecordedLabel two(std::move(second), store);
  RecordedLabel three(std::move(third), store);
  EXPECT_EQ(store.args.size(), 14u);
  EXPECT_EQ(store.names.size(), 3u);
  EXPECT_TRUE(first.buffer_args().empty());  // moved out of the operation's label
  EXPECT_TRUE(second.buffer_args().empty());
  EXPECT_EQ(one.expand(store).text(), first_text);
  EXPECT_EQ(two.expand(store).text(), second_text);
  EXPECT_EQ(three.expand(store).text(), third_text);
  EXPECT_EQ(two.expand(store).first_line(), "op b grid 7 n 42");
  EXPECT_EQ(two.expand(store).buffer_args().size(), 11u);
}

TEST(RecordedLabelTest, KeepsATextLabelAndAnEmptyOne) {
  NodeStore store;
  RecordedLabel text(OperationLabel::of_text("external work\nsecond line"), store);
  RecordedLabel empty(OperationLabel{}, store);
  EXPECT_FALSE(text.empty());
  EXPECT_TRUE(empty.empty());
  EXPECT_TRUE(RecordedLabel{}.empty());
  EXPECT_EQ(text.expand(store).text(), "external work\nsecond line");
  EXPECT_EQ(text.expand(store).first_line(), "external work");
  EXPECT_TRUE(empty.expand(store).empty());
  EXPECT_TRUE(store.args.empty());
  EXPECT_EQ(store.names.size(), 1u);
}

TEST(RecordedLabelTest, LabelsOfOneNameKeepItOnceAndHoldNoReferenceEach) {
  NodeStore store;
  auto name = std::make_shared<const std::string>("add_one");
  std::vector<RecordedLabel> labels;
  for (int i = 0; i < 100; ++i) {
    OperationLabel label(&render_for_test);
    label.name = name;
    labels.emplace_back(std::move(label), store);
  }
  ASSERT_EQ(store.names.size(), 1u);
  EXPECT_EQ(name.use_count(), 2);  // ours and the store's: the 100 labels hold none
  EXPECT_EQ(labels[57].expand(store).first_line(), "op add_one grid 1 n 0");
  // Another name between two runs of the first: kept once per run.
  OperationLabel other(&render_for_test);
  other.name = std::make_shared<const std::string>("fill");
  labels.emplace_back(std::move(other), store);
  OperationLabel again(&render_for_test);
  again.name = name;
  labels.emplace_back(std::move(again), store);
  EXPECT_EQ(store.names.size(), 3u);
  EXPECT_EQ(labels[100].expand(store).first_line(), "op fill grid 1 n 0");
  EXPECT_EQ(labels[101].expand(store).first_line(), "op add_one grid 1 n 0");
}

}  // namespace
}  // namespace graphcap::capture
