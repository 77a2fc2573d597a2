// OperationLabel: what a recorded operation is, for diagnostics (Graph::dot(), the debug log,
// refusal messages, Graph::replay_checked). Recording keeps only a compact record of it (the
// kernel's name by shared reference, the launch shape, one entry per buffer argument, a few
// numbers, the call's source location as the compiler's handle) and no text: the
// text is rendered only when something asks for it, by the operation's own formatter (`render`,
// defined next to the operation in device_launch.cc, device_copy.cc, ...). Building the text on
// every recorded launch was a third of graphcap's capture overhead (docs/performance.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <source_location>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <graphcap/driver/launch_dims.h>
#include <graphcap/error.h>

namespace graphcap::capture {

// "file:line" of a call (the file as the compiler names it); empty when unknown (line 0).
std::string call_site(const std::source_location& where);
// " at file:line", for a message naming an operation ("launch of add_one at model.cc:42"); empty
// when unknown.
std::string located(const std::source_location& where);
// `error` of the call at `where`, its message ending " (at file:line)": for refusals the
// operation's own messages don't place. Cold: only on a failure.
[[gnu::cold]] Error called_at(const Error& error, const std::source_location& where);

class OperationLabel {
 public:
  // One argument of a kernel launch the label shows: its position, its access (a code the
  // renderer defines), and a buffer's size and label, or a value's size and first 8 bytes
  // (values and params too, despite the name: no text is built when recording them).
  struct BufferArg {
    std::uint64_t bytes = 0;  // a buffer's size; a value's first (up to 8) bytes
    std::uint64_t address = 0;  // a buffer's device address, as the operation passed it
    std::uint32_t index = 0;
    std::uint8_t access = 0;
    std::uint8_t value_size = 0;  // a value's size (0 for a buffer)
    // A buffer's label, if it has one; a value of more than 8 bytes: all its bytes (rare: what
    // Graph::replay_checked passes again, as recorded).
    std::shared_ptr<const std::string> label;
  };
  using Render = std::string (*)(const OperationLabel&);

  // The inline arguments are constructed only as they are added, and a copy, a move or the
  // destructor touches only those (a recorded launch's label is made, moved into the recording
  // and destroyed with it: constructing, moving and destroying all eight entries, each with its
  // shared label, was most of graphcap's own cost per recorded launch; docs/performance.md). A
  // moved-from label is empty (it renders nothing rather than a name it no longer
  // holds).
  OperationLabel() noexcept {}
  ~OperationLabel() { destroy_inline(); }
  OperationLabel(const OperationLabel& other)
      : name(other.name),
        dims(other.dims),
        numbers(other.numbers),
        where(other.where),
        render_(other.render_),
        text_(other.text_),
        more_args_(other.more_args_) {
    const std::uint32_t used = other.inline_used();
    for (std::uint32_t i = 0; i < used; ++i) {
      new (&inline_args_[i]) BufferArg(other.inline_args_[i]);
    }
    arg_count_ = other.arg_count_;
  }
  OperationLabel& operator=(const OperationLabel& other) {
    if (this != &other) {
      OperationLabel copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  OperationLabel(OperationLabel&& other) noexcept { take(other); }
  OperationLabel& operator=(OperationLabel&& other) noexcept {
    if (this != &other) {
      destroy_inline();
      arg_count_ = 0;
      more_args_.clear();
      take(other);
    }
    return *this;
  }
  // A label rendered by `render` from what the operation stores below.
  explicit OperationLabel(Render render) noexcept : render_(render) {}
  // A label given as text (rare paths: a write from the host, external work).
  static OperationLabel of_text(std::string text) {
    OperationLabel label;
    label.text_ = std::move(text);
    return label;
  }

  // Makes an empty label one rendered by `render` (filled in place, without a move).
  void set_render(Render render) noexcept { render_ = render; }
  Render renderer() const noexcept { return render_; }

  bool empty() const noexcept { return render_ == nullptr && text_.empty(); }
  // The full text, one line per fact (e.g. "kernel add_one\ngrid (1, 1, 1) block (256, 1, 1)
  // \narg 0: in 256 B\nat model.cc:42", the last line where it was called, when known); empty
  // for an empty label.
  std::string text() const;
  // Its first line and where it was called (e.g. "kernel add_one at model.cc:42"): what messages
  // name the operation by.
  std::string first_line() const;

  // What the renderer reads (set by the operation that makes the label).
  std::shared_ptr<const std::string> name;  // e.g. the kernel's name (kept alive with the label)
  LaunchDims dims{};
  std::array<std::uint64_t, 5> numbers{};  // e.g. a copy's bytes, offsets and sizes
  // The public call that made the operation (its last, defaulted parameter): a handle to the
  // compiler's static record, copied, formatted only when rendered (line 0: unknown).
  std::source_location where{};

  void add_buffer_arg(const BufferArg& arg);
  // Moves every buffer argument to the end of `out`; the label keeps none.
  void take_buffer_args(std::vector<BufferArg>& out);
  std::span<const BufferArg> buffer_args() const noexcept {
    return more_args_.empty() ? std::span<const BufferArg>(inline_args_, arg_count_)
                              : std::span<const BufferArg>(more_args_);
  }

 private:
  static constexpr std::size_t kInlineArgs = 8;

  // How many inline entries are constructed: the arguments, or all of them once the arguments
  // spilled into more_args_ (which then holds every argument, the inline ones copied).
  std::uint32_t inline_used() const noexcept {
    return more_args_.empty() ? arg_count_ : static_cast<std::uint32_t>(kInlineArgs);
  }
  void destroy_inline() noexcept {
    const std::uint32_t used = inline_used();
    for (std::uint32_t i = 0; i < used; ++i) inline_args_[i].~BufferArg();
  }
  // Takes `other`'s contents into this label, whose inline entries are not constructed.
  void take(OperationLabel& other) noexcept {
    const std::uint32_t used = other.inline_used();
    for (std::uint32_t i = 0; i < used; ++i) {
      new (&inline_args_[i]) BufferArg(std::move(other.inline_args_[i]));
      other.inline_args_[i].~BufferArg();
    }
    name = std::move(other.name);
    dims = other.dims;
    numbers = other.numbers;
    where = other.where;
    render_ = std::exchange(other.render_, nullptr);
    text_ = std::move(other.text_);
    other.text_.clear();
    arg_count_ = std::exchange(other.arg_count_, 0);
    more_args_ = std::move(other.more_args_);
    other.more_args_.clear();
  }

  Render render_ = nullptr;
  std::string text_;
  std::uint32_t arg_count_ = 0;
  union {
    BufferArg inline_args_[kInlineArgs];  // constructed up to inline_used()
  };
  std::vector<BufferArg> more_args_;  // every argument, once there are more than kInlineArgs
};

}  // namespace graphcap::capture
