// The lazy device. Every stream-ordered operation joins one global FIFO, which respects stream
// order and event waits, and runs only when the host waits for it. Graph launches run their
// nodes in dependency order against the same simulated memory.
#include <graphcap/fake/internal/fake_state.h>

#include <cstring>

#include <graphcap/fake/internal/overloaded.h>

namespace graphcap::fake {
using internal::Overloaded;

void FakeState::enqueue(Stream& stream, const char* entry_point, QueuedWork work) {
  const std::uint64_t seq = next_seq_++;
  queue_.push_back(Op{seq, stream.id, entry_point, std::move(work), false, 0,
                      options_.detect_races ? host_clock_ : nullptr});
  stream.last_seq = seq;
  ++stream.pending;
}

void FakeState::run_until(std::uint64_t seq) {
  while (!queue_.empty() && queue_.front().seq <= seq) {
    Op op = std::move(queue_.front());
    queue_.pop_front();
    execute(op);
  }
}

void FakeState::run_all() {
  while (!queue_.empty()) {
    Op op = std::move(queue_.front());
    queue_.pop_front();
    execute(op);
  }
  if (options_.detect_races) host_waited_all();  // every operation queued has run
}

std::optional<CUresult> FakeState::take_error(Stream& stream, std::uint64_t before_seq) {
  if (!stream.error || stream.error->seq >= before_seq) return std::nullopt;
  const CUresult code = stream.error->code;
  reported_faults_[stream.id] = std::move(stream.error->fault);
  stream.error.reset();
  return code;
}

void FakeState::violation(std::string text, CUresult code) {
  if (options_.strict && running_.active) fault(code, text);
  violations_.push_back(std::move(text));
}

void FakeState::fault(CUresult code, std::string text) {
  if (running_.trap) return;  // the work already failed: the first failure is what it reports
  running_.trap = code;
  running_.fault = std::move(text);
}

std::string FakeState::stream_fault(CUstream handle) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (sticky_) return sticky_fault_;  // every stream reports the device's fault
  const Stream* stream = find_stream(handle);
  if (stream == nullptr) return {};
  auto it = reported_faults_.find(stream->id);
  return it == reported_faults_.end() ? std::string() : it->second;
}

void FakeState::execute(Op& op) {
  Stream* stream = stream_by_id(op.stream);
  if (stream != nullptr && stream->pending > 0) --stream->pending;
  if (sticky_) return;  // a fault ended all work of the device (measured: queued work never runs)
  std::optional<CUresult> fault;
  // The eager race check: what this operation writes, against the other streams' writes.
  const bool eager = options_.detect_races && stream != nullptr && op.host != nullptr;
  internal::AccessLog written;
  if (eager) begin_eager(op, *stream);
  std::visit(Overloaded{
                 [&](const internal::NodeWork& work) {
                   tick();
                   accesses_ = eager ? &written : nullptr;
                   struct Unrecord {
                     internal::AccessLog*& accesses;
                     ~Unrecord() { accesses = nullptr; }
                   } unrecord{accesses_};
                   if (!op.watch_writes && op.programmatic_after == 0) {
                     fault = execute_node(work, op.entry_point) ? std::nullopt : running_.trap;
                     return;
                   }
                   // Programmatic dependent launch: this kernel's predecessor's writes, or its
                   // own for the programmatic launch after it.
                   PdlWatch watch;
                   watch.record_writes = op.watch_writes;
                   auto before = pdl_writes_.find(op.programmatic_after);
                   if (before != pdl_writes_.end()) watch.before_wait.push_back(&before->second);
                   fault = execute_node(work, op.entry_point, &watch) ? std::nullopt
                                                                     : running_.trap;
                   if (before != pdl_writes_.end()) pdl_writes_.erase(before);
                   if (op.watch_writes) pdl_writes_[op.seq] = std::move(watch.written);
                 },
                 [&](const EventRecordWork& record) {
                   tick();
                   // Waits on it were ordered when they were made: they hold even after the
                   // event is destroyed (an application may destroy it right after the wait).
                   if (eager) eager_record(op, record.event);
                   auto it = events_.find(record.event);
                   if (it == events_.end()) return;
                   Event& event = it->second;
                   if (event.state == Event::State::recorded && event.record_seq == op.seq) {
                     event.done = true;
                     event.time_ns = clock_ns_;
                   }
                 },
                 [&](const GraphLaunchWork& launch) {
                   // Every launch starts from the defaults of the handles that assign them; the
                   // others keep their value (0 until a kernel sets one).
                   for (const internal::ConditionDef& condition : launch.body->conditions) {
                     unsigned& value = condition_values_[{launch.exec, condition.handle}];
                     if (condition.assign_default) value = condition.default_value;
                   }
                   running_exec_ = launch.exec;
                   running_conditions_ = &launch.body->conditions;
                   if (!run_graph(*launch.body, launch.exec, 0,
                                  options_.detect_races ? &written : nullptr)) {
                     fault = running_.trap;
                   }
                   running_exec_ = nullptr;
                   running_conditions_ = nullptr;
                 },
             },
             op.work);
  if (eager && !written.ranges.empty()) {
    std::string text;
    if (!check_eager_writes(op, *stream, written, &text) && options_.strict && !fault) {
      fault = CUDA_ERROR_LAUNCH_FAILED;
      running_.fault = std::move(text);
    }
  }
  if (fault && options_.strict && !sticky_) {
    sticky_ = *fault;  // as on the GPU: every later call that touches a context reports it
    sticky_fault_ = running_.fault;
  }
  if (fault && stream != nullptr && !stream->error) {
    stream->error = StreamError{*fault, op.seq, std::move(running_.fault)};
  }
  running_.fault.clear();
}

bool FakeState::execute_node(const internal::NodeWork& work, const std::string& where,
                             PdlWatch* pdl) {
  running_.kernel = nullptr;
  running_.where.clear();
  running_.trap.reset();
  running_.fault.clear();
  running_.pdl = nullptr;
  running_.waited = false;
  running_.pdl_reported = false;
  running_.active = true;  // under strict, a violation from here faults this node
  struct Inactive {
    RunningKernel& running;
    ~Inactive() { running.active = false; }
  } inactive{running_};
  std::string why;
  std::visit(
      Overloaded{
          [&](const internal::KernelWork& kernel) { execute_kernel(kernel, where, pdl); },
          [&](const internal::CopyToDeviceWork& copy) {
            if (copy.bytes == 0) return;
            std::byte* dst = device_memory_.access(copy.dst, copy.bytes, &why);
            if (dst == nullptr) {
              violation(where + ": " + internal::describe(work) + ": destination " + why);
              return;
            }
            if (accesses_ != nullptr) accesses_->add(copy.dst, copy.bytes, true);
            if (copy.from_snapshot) {
              std::memcpy(dst, copy.snapshot.data(), copy.bytes);
              return;
            }
            if (copy.pinned && !pinned_memory_.contains(copy.src, copy.bytes)) {
              violation(where + ": " + internal::describe(work) + ": source " +
                        internal::hex(reinterpret_cast<std::uintptr_t>(copy.src)) +
                        " was pinned host memory and has been freed");
              return;
            }
            std::memcpy(dst, copy.src, copy.bytes);
          },
          [&](const internal::CopyToHostWork& copy) {
            if (copy.bytes == 0) return;
            std::byte* src = device_memory_.access(copy.src, copy.bytes, &why);
            if (src == nullptr) {
              violation(where + ": " + internal::describe(work) + ": source " + why);
              return;
            }
            if (accesses_ != nullptr) accesses_->add(copy.src, copy.bytes, false);
            if (copy.pinned && !pinned_memory_.contains(copy.dst, copy.bytes)) {
              violation(where + ": " + internal::describe(work) + ": destination " +
                        internal::hex(reinterpret_cast<std::uintptr_t>(copy.dst)) +
                        " was pinned host memory and has been freed");
              return;
            }
            std::memcpy(copy.dst, src, copy.bytes);
          },
          [&](const internal::MemsetWork& memset) {
            if (memset.count == 0) return;
            std::byte* dst = device_memory_.access(memset.dst, memset.bytes(), &why);
            if (dst == nullptr) {
              violation(where + ": " + internal::describe(work) + ": " + why);
              return;
            }
            if (accesses_ != nullptr) accesses_->add(memset.dst, memset.bytes(), true);
            if (memset.element_size == 1) {
              std::memset(dst, static_cast<unsigned char>(memset.value), memset.count);
              return;
            }
            const std::uint32_t word = memset.value;
            for (std::size_t i = 0; i < memset.count; ++i) std::memcpy(dst + 4 * i, &word, 4);
          },
          [&](const internal::CopyDeviceWork& copy) {
            if (copy.bytes == 0) return;
            std::byte* src = device_memory_.access(copy.src, copy.bytes, &why);
            if (src == nullptr) {
              violation(where + ": " + internal::describe(work) + ": source " + why);
              return;
            }
            std::byte* dst = device_memory_.access(copy.dst, copy.bytes, &why);
            if (dst == nullptr) {
              violation(where + ": " + internal::describe(work) + ": destination " + why);
              return;
            }
            if (accesses_ != nullptr) {
              accesses_->add(copy.src, copy.bytes, false);
              accesses_->add(copy.dst, copy.bytes, true);
            }
            std::memmove(dst, src, copy.bytes);
          },
          [&](const internal::AllocWork& alloc) {
            internal::DeviceMemory::Allocation* allocation =
                device_memory_.find_base(alloc.address);
            if (allocation == nullptr) {
              violation(where + ": " + internal::describe(work) + ": no such reservation");
            } else if (allocation->device_live) {
              violation(where + ": " + internal::describe(work) + ": still allocated by an " +
                        "earlier launch");
            } else {
              device_memory_.make_live(*allocation);
            }
          },
          [&](const internal::FreeWork& free) {
            internal::DeviceMemory::Allocation* allocation = device_memory_.find_base(free.address);
            if (allocation == nullptr || !allocation->device_live) {
              violation(where + ": " + internal::describe(work) + ": not allocated at this point");
            } else {
              device_memory_.make_dead(*allocation);
            }
          },
          [&](const internal::WaitEventWork&) {},  // the global order already satisfies it
          [&](const internal::EmptyWork&) {},
          [&](const internal::ConditionalWork&) {},  // only in graphs: run_graph runs it
      },
      work);
  return !running_.trap.has_value();
}

void FakeState::execute_kernel(const internal::KernelWork& work, const std::string& where,
                               PdlWatch* pdl) {
  const std::string& name = work.kernel->name;
  if (modules_.find(work.module) == modules_.end()) {
    // A GPU would fetch the code of an unloaded module from freed memory.
    violation(where + ": kernel '" + name + "' belongs to a module that has been unloaded");
    return;
  }
  if (!work.held.empty()) check_baked(work, where);
  KernelContext context(*this, name, work.dims, work.kernel->params, work.params);
  running_.kernel = work.kernel.get();
  running_.work = &work;
  running_.where = where;
  running_.pdl = pdl;
  if (pdl != nullptr && pdl->record_writes) pdl->written.kernel = name;
  try {
    work.kernel->body(context);
  } catch (const std::exception& error) {
    violation(where + ": kernel '" + name + "' threw: " + error.what(), CUDA_ERROR_LAUNCH_FAILED);
    fault(CUDA_ERROR_LAUNCH_FAILED, where + ": kernel '" + name + "' threw: " + error.what());
  } catch (...) {
    violation(where + ": kernel '" + name + "' threw", CUDA_ERROR_LAUNCH_FAILED);
    fault(CUDA_ERROR_LAUNCH_FAILED, where + ": kernel '" + name + "' threw");
  }
  running_.kernel = nullptr;
  running_.work = nullptr;
  running_.pdl = nullptr;
}

std::vector<internal::BufferExtent> FakeState::launch_extents(const internal::KernelWork& work) {
  std::vector<internal::BufferExtent> extents;
  for (const KernelParamInfo& param : work.kernel->params) {
    if (param.size != sizeof(CUdeviceptr)) continue;
    CUdeviceptr address = 0;
    std::memcpy(&address, work.params.data() + param.offset, sizeof address);
    internal::DeviceMemory::Extent extent;
    std::string why;
    if (address == 0 || !device_memory_.extent(address, &extent, &why) || !extent.buffer) continue;
    bool known = false;
    for (const internal::BufferExtent& seen : extents) known = known || seen.base == extent.base;
    if (!known) extents.push_back({extent.base, extent.size});
  }
  return extents;
}

}  // namespace graphcap::fake
