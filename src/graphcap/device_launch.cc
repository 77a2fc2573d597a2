// Device::launch: a kernel launch, eager or recorded, checked before the driver sees it.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <graphcap/arg_access.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/kernel_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/device_limits.h>
#include <graphcap/driver/launch_config.h>
#include <graphcap/handle_access.h>
#include <graphcap/log.h>
#include <graphcap/memory/buffer_state.h>
#include <graphcap/try.h>

namespace graphcap {
namespace {

using detail::StreamCore;

std::string dim_text(const Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// Whether check_dims accepts `dims`: the same bounds as one expression, no message (the launch
// hot path; check_dims runs only when this is false, to say which bound failed).
bool dims_within(const LaunchDims& dims, const DeviceLimits& limits) noexcept {
  const Dim3& g = dims.grid;
  const Dim3& b = dims.block;
  // x - 1 < max is 1 <= x <= max in one unsigned compare (0 - 1 wraps to the largest value).
  return (g.x - 1u < limits.max_grid.x) & (g.y - 1u < limits.max_grid.y) &
         (g.z - 1u < limits.max_grid.z) & (b.x - 1u < limits.max_block.x) &
         (b.y - 1u < limits.max_block.y) & (b.z - 1u < limits.max_block.z) &
         (dims.shared_bytes <= limits.max_shared_bytes) &
         (1ULL * b.x * b.y * b.z <= limits.max_threads_per_block);
}

[[gnu::cold]] Result<void> check_dims(const LaunchDims& dims, const DeviceLimits& limits) {
  auto fail = [](std::string why) { return Error(Errc::invalid_argument, std::move(why)); };
  if (dims.grid.x == 0 || dims.grid.y == 0 || dims.grid.z == 0) {
    return fail("grid " + dim_text(dims.grid) + " has a zero dimension");
  }
  if (dims.block.x == 0 || dims.block.y == 0 || dims.block.z == 0) {
    return fail("block " + dim_text(dims.block) + " has a zero dimension");
  }
  if (dims.block.x > limits.max_block.x || dims.block.y > limits.max_block.y ||
      dims.block.z > limits.max_block.z) {
    return fail("block " + dim_text(dims.block) + " exceeds the device's " +
                dim_text(limits.max_block));
  }
  const unsigned long long threads = 1ULL * dims.block.x * dims.block.y * dims.block.z;
  if (threads > limits.max_threads_per_block) {
    return fail("block of " + std::to_string(threads) + " threads exceeds the device's " +
                std::to_string(limits.max_threads_per_block));
  }
  if (dims.grid.x > limits.max_grid.x || dims.grid.y > limits.max_grid.y ||
      dims.grid.z > limits.max_grid.z) {
    return fail("grid " + dim_text(dims.grid) + " exceeds the device's " +
                dim_text(limits.max_grid));
  }
  if (dims.shared_bytes > limits.max_shared_bytes) {
    return fail(std::to_string(dims.shared_bytes) + " bytes of shared memory exceed the device's " +
                std::to_string(limits.max_shared_bytes));
  }
  return {};
}

// The argument's size as the kernel receives it: a buffer passes its device address.
std::size_t given_size(const Arg& arg) noexcept {
  return arg.buffer() != nullptr ? sizeof(CUdeviceptr) : arg.size();
}

std::string bytes_text(std::size_t bytes) {
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

std::string arg_text(const Arg& arg) {
  return arg.buffer() != nullptr
             ? "a buffer (a " + std::to_string(sizeof(CUdeviceptr)) + "-byte device pointer)"
             : "a value of " + bytes_text(arg.size());
}

// The messages of a launch refused by the kernel's signature (cold: built only on refusal).
[[gnu::cold, gnu::noinline]] Error count_mismatch(const std::string& kernel,
                                                  const detail::ParamLayout& layout,
                                                  std::initializer_list<Arg> args) {
  const std::size_t given = args.size();
  const std::size_t taken = layout.count();
  std::string why = "launch of " + kernel + ": " + std::to_string(given) +
                    (given == 1 ? " argument" : " arguments") + " for a kernel of " +
                    std::to_string(taken) + (taken == 1 ? " parameter" : " parameters") + ": ";
  if (given < taken) {
    why += "parameter " + std::to_string(given) + " (" + bytes_text(layout.sizes[given]) +
           ") has no argument (given 0 bytes)";
  } else {
    why += "argument " + std::to_string(taken) + " (" + arg_text(args.begin()[taken]) +
           ") has no parameter (expected 0 bytes)";
  }
  return Error(Errc::invalid_argument, std::move(why));
}

[[gnu::cold, gnu::noinline]] Error size_mismatch(const std::string& kernel, std::size_t index,
                                                 std::size_t expected, const Arg& arg) {
  return Error(Errc::invalid_argument,
               "launch of " + kernel + ": parameter " + std::to_string(index) + " takes " +
                   bytes_text(expected) + ", argument " + std::to_string(index) + " is " +
                   arg_text(arg) + " (expected " + std::to_string(expected) + ", given " +
                   std::to_string(given_size(arg)) + ")");
}

const char* access_name(Arg::Access access) noexcept {
  switch (access) {
    case Arg::Access::in: return "in";
    case Arg::Access::out: return "out";
    case Arg::Access::inout: return "inout";
    case Arg::Access::param: return "param";
    case Arg::Access::condition: return "condition";
    case Arg::Access::value: break;
  }
  return "value";
}

// What a recorded launch shows in Graph::dot(), the debug log and messages: one line per fact,
// rendered from the compact record launch_label keeps (only when something asks for the text).
std::string render_launch(const capture::OperationLabel& label) {
  std::string text = "kernel " + *label.name + "\ngrid " + dim_text(label.dims.grid) + " block " +
                     dim_text(label.dims.block);
  if (label.dims.shared_bytes != 0) text += " shared " + std::to_string(label.dims.shared_bytes);
  for (const capture::OperationLabel::BufferArg& arg : label.buffer_args()) {
    const auto access = static_cast<Arg::Access>(arg.access);
    text += "\narg " + std::to_string(arg.index) + ": " + access_name(access);
    if (access == Arg::Access::condition) continue;  // a conditional handle: no value to show
    if (arg.value_size == 0) {  // a buffer
      text += " " + std::to_string(arg.bytes) + " B";
      if (arg.label) text += " \"" + *arg.label + "\"";
      continue;
    }
    text += " " + std::to_string(arg.value_size) + " B";
    if (arg.value_size <= sizeof arg.bytes) {  // a scalar: its value, as an integer and in hex
      char hex[24];
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(arg.bytes));
      text += " = " + std::to_string(arg.bytes) + " (" + hex + ")";
      if (access == Arg::Access::param) text += " when recorded";
    }
  }
  return text;
}

// The record of a launch its label is rendered from, written into the operation's (empty) label
// in place: no text is built here, and no label is moved (the hot path of a recorded launch).
// Out of line: an eager launch makes none.
// It also keeps what Graph::replay_checked issues the launch again with: the function, and each
// argument as passed (a buffer's address; a value's bytes).
[[gnu::noinline]] void launch_label(capture::OperationLabel& label,
                  const std::shared_ptr<detail::KernelState>& state,
                  const LaunchDims& dims, std::initializer_list<Arg> args,
                  const std::source_location& where) {
  label.set_render(&render_launch);
  label.name = std::shared_ptr<const std::string>(state, &state->name());
  label.dims = dims;
  label.where = where;
  label.numbers[0] = reinterpret_cast<std::uintptr_t>(state->function());
  std::uint32_t index = 0;
  for (const Arg& arg : args) {
    capture::OperationLabel::BufferArg shown;
    shown.index = index++;
    shown.access = static_cast<std::uint8_t>(arg.access());
    if (const Buffer* buffer = arg.buffer()) {
      shown.bytes = buffer->size();
      shown.address = buffer->native_handle();
      shown.label = HandleAccess::state(*buffer)->label();  // null unless labelled: one atomic
    } else {
      shown.value_size = static_cast<std::uint8_t>(arg.size());
      std::memcpy(&shown.bytes, HandleAccess::bytes(arg), std::min(arg.size(), sizeof shown.bytes));
      if (arg.size() > sizeof shown.bytes) [[unlikely]] {
        shown.label = std::make_shared<const std::string>(
            reinterpret_cast<const char*>(HandleAccess::bytes(arg)), arg.size());
      }
    }
    label.add_buffer_arg(shown);
  }
}


// A loop's or branch's condition handle means something only to the recording that made it.
[[gnu::cold, gnu::noinline]] Error foreign_condition(const std::string& kernel, std::size_t arg,
                                                     bool recording) {
  return Error(Errc::invalid_argument,
               "launch of " + kernel + ": argument " + std::to_string(arg) +
                   " is the condition of a loop or branch of " +
                   (recording ? "another recording" : "a recording, and this launch is eager") +
                   "; only a kernel recorded into the loop's own recording may set it");
}

// What Graph::set needs to set a recorded launch's node again: every argument's bytes at its
// offset and the params bound to it. Out of line: the eager path never runs it (the launch
// path's code is kept to few cache lines, as the driver's launch evicts them).
[[gnu::noinline]] std::unique_ptr<capture::ParamNode> param_node_of(
    const detail::KernelState& state, const LaunchDims& dims, std::initializer_list<Arg> args,
    void* const* params) {
  auto param_node = std::make_unique<capture::ParamNode>();
  param_node->function = state.function();
  param_node->dims = dims;
  std::size_t i = 0;
  for (const Arg& arg : args) {
    const std::size_t size = arg.buffer() != nullptr ? sizeof(CUdeviceptr) : arg.size();
    const std::size_t offset = (param_node->bytes.size() + 7) / 8 * 8;
    param_node->bytes.resize(offset + size);
    std::memcpy(param_node->bytes.data() + offset, params[i], size);
    param_node->offsets.push_back(offset);
    param_node->sizes.push_back(size);
    if (arg.access() == Arg::Access::param) {
      param_node->bindings.push_back({i, std::shared_ptr<const void>(HandleAccess::param(arg))});
    }
    ++i;
  }
  return param_node;
}

// A launch with attributes: cuLaunchKernelEx (docs/cuda-driver-facts.md, "Programmatic dependent
// launch and priorities").
Result<void> launch_ex(DriverApi& driver, CUfunction function, const LaunchDims& dims,
                       CUstream stream, void** params, const LaunchOptions& options) {
  LaunchAttributeList attributes;
  if (options.programmatic) attributes.programmatic();
  if (options.priority) attributes.priority(*options.priority);
  CUlaunchConfig config = launch_config(dims, stream, &attributes);
  if (CUresult result = driver.cuLaunchKernelEx(&config, function, params, nullptr);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuLaunchKernelEx", result);
  }
  return {};
}

}  // namespace

Result<void> Device::launch(Stream& s, const Kernel& kernel, LaunchDims dims,
                            std::initializer_list<Arg> args, const LaunchOptions& options,
                            std::source_location where) {
  // check_stream's usual outcome, here without a call; it says why only when this fails.
  if (!core_->serves(HandleAccess::core(s).device())) [[unlikely]] {
    GRAPHCAP_TRY(check_stream(s, "launch"));
  }
  if (!kernel) [[unlikely]] return Error(Errc::invalid_argument, "launch: an empty Kernel");
  const std::shared_ptr<detail::KernelState>& state = HandleAccess::state(kernel);
  // Names the launch in messages; built only when one is needed (this is the eager hot path).
  auto what = [&state, &where] { return "launch of " + state->name() + capture::located(where); };
  if (&state->module()->device() != core_.get()) [[unlikely]] {
    return Error(Errc::invalid_argument, what() + ": the kernel's module belongs to " +
                                             core_->another_device(state->module()->device()));
  }
  if (state->module()->released()) [[unlikely]] {
    return Error(Errc::graph_state, what() + ": its module was unloaded");
  }
  if (!dims_within(dims, core_->limits())) [[unlikely]] {
    if (Result<void> ok = check_dims(dims, core_->limits()); !ok) return ok.error().context(what());
  }
  if (args.size() > kMaxLaunchArgs) [[unlikely]] {
    return Error(Errc::invalid_argument, what() + ": " + std::to_string(args.size()) +
                                             " arguments (at most " +
                                             std::to_string(kMaxLaunchArgs) + ")");
  }

  // The kernel's own signature, read once by Module::kernel (nullptr where the driver couldn't
  // report it: unchecked). A mismatch is refused here, before the driver or the window sees the
  // launch: nothing is marked, no recording is doomed.
  const detail::ParamLayout* layout = state->layout();
  if (layout != nullptr && args.size() != layout->count()) [[unlikely]] {
    return count_mismatch(state->name(), *layout, args);
  }

  // One pass over the arguments: check each against its parameter's size and each buffer, and
  // lay out the driver's parameter array (exactly args.size() entries: CUDA knows the count from
  // the kernel) and the operation's uses.
  std::array<CUdeviceptr, kMaxLaunchArgs> pointers;
  std::array<void*, kMaxLaunchArgs> params;
  std::array<capture::BufferUse, kMaxLaunchArgs> uses;
  std::array<unsigned char, kMaxLaunchArgs> use_arg;  // each use's argument index, for messages
  std::size_t use_count = 0;
  std::size_t index = 0;
  bool takes_params = false;
  std::uint64_t condition_recording = 0;  // a loop's or branch's handle is among the arguments
  std::uint64_t condition_id = 0;
  std::size_t condition_arg = 0;
  for (const Arg& arg : args) {
    if (layout != nullptr && layout->sizes[index] != given_size(arg)) [[unlikely]] {
      return size_mismatch(state->name(), index, layout->sizes[index], arg);
    }
    if (const Buffer* buffer = arg.buffer()) {
      if (Result<void> ok = check_buffer(*buffer, s, "it", arg.writes()); !ok) [[unlikely]] {
        return ok.error().context(what() + ": argument " + std::to_string(index));
      }
      pointers[index] = buffer->native_handle();
      params[index] = &pointers[index];
      uses[use_count] = {&HandleAccess::state(*buffer), detail::access_of(arg.access())};
      use_arg[use_count++] = static_cast<unsigned char>(index);
    } else {
      if (arg.access() == Arg::Access::param) {
        if (!HandleAccess::param(arg)) [[unlikely]] {
          return Error(Errc::invalid_argument,
                       what() + ": argument " + std::to_string(index) + " is an empty Param");
        }
        takes_params = true;
      } else if (arg.access() == Arg::Access::condition) {
        if (HandleAccess::condition_recording(arg) == 0) [[unlikely]] {
          return Error(Errc::invalid_argument, what() + ": argument " + std::to_string(index) +
                                                   " is an empty Loop or Condition");
        }
        condition_recording = HandleAccess::condition_recording(arg);
        condition_id = HandleAccess::condition_id(arg);
        condition_arg = index;
      }
      params[index] = const_cast<std::byte*>(HandleAccess::bytes(arg));
    }
    ++index;
  }

  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  capture::Operation op;
  op.node = CU_GRAPH_NODE_TYPE_KERNEL;
  op.uses = {uses.data(), use_count};
  // (Inlined: a call of its own cost the eager path a second prologue and epilogue.)
  Result<void> done = [&]() __attribute__((always_inline)) -> Result<void> {
  std::lock_guard lock(stream.mutex());
  const bool recording = stream.recording();
  if (condition_recording != 0 && condition_recording != stream.recording_id())
      [[unlikely]] {
    return foreign_condition(state->name(), condition_arg, recording);
  }
  if (recording) {
    op.keep_alive = capture::KeepAliveRef::of(state);  // a replay needs its module loaded
    launch_label(op.label, state, dims, args, where);
  } else if (log_enabled(LogLevel::debug)) [[unlikely]] {
    launch_label(op.label, state, dims, args, where);
  }
  // A recorded launch that takes params: what Graph::set needs to set its node again (the
  // recording names the node as it records the launch). Made only for such a launch: most take
  // none, and an empty pointer costs them nothing to make and destroy.
  std::unique_ptr<capture::ParamNode> param_holder;
  if (recording && takes_params) [[unlikely]] {
    param_holder = param_node_of(*state, dims, args, params.data());
    op.params = param_holder.get();
  }
  op.condition = condition_id;
  op.programmatic = options.programmatic;
  op.priority = options.priority.has_value();
  return stream.run(
      op,
      [&]() __attribute__((always_inline)) -> Result<void> {
        // Above the device's default (48 KiB), dynamic shared memory must be enabled for the
        // function first: once per kernel and size, then one atomic load per launch.
        if (dims.shared_bytes > core_->limits().default_shared_bytes &&
            dims.shared_bytes > state->dynamic_shared_enabled()) {
          GRAPHCAP_TRY(state->enable_dynamic_shared(core_->driver(), dims.shared_bytes));
        }
        if (!options.programmatic && !options.priority) {
          if (CUresult result = core_->driver().cuLaunchKernel(
                  state->function(), dims.grid.x, dims.grid.y, dims.grid.z, dims.block.x,
                  dims.block.y, dims.block.z, dims.shared_bytes, stream.target(), params.data(),
                  nullptr);
              result != CUDA_SUCCESS) [[unlikely]] {
            return Error::from_driver("cuLaunchKernel", result);
          }
          return {};
        }
        return launch_ex(core_->driver(), state->function(), dims, stream.target(),
                         params.data(), options);
      },
      what, [&](std::size_t use) { return "argument " + std::to_string(use_arg[use]); });
  }();
  if (op.borrowed_fence != nullptr) stream.return_borrowed(op);  // only after a borrowed buffer
  return done;
}

}  // namespace graphcap
