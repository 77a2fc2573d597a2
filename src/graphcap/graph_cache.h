// GraphCache<Key>: one graph per key (a batch-size bucket, a shape), recorded lazily on the key's
// first run, replayed on every later one, with an eager fallback when a recording is refused.
//
//   GraphCache<std::size_t> cache(device, device.stream());
//   Result<void> done = cache.run(bucket, [&]() -> Result<void> { ...issue the step on the stream... });
//
// One run has the effect of exactly one execution of the step. On a key's first run the warm-up
// that primes the capture window *is* that execution (the one capture sequence,
// capture_sequence.h: prepare_capture, record(), begin_capture, record() again into the
// recording, end_capture: the step was run once and recorded once); later runs replay. A refused
// recording (doomed, memory nodes, a failed driver call) leaves the warm-up's results in place
// (the cache's windows don't claim: the warm-up wrote those buffers), counts a fallback, and the
// key is tried again next time; after `give_up_after` refusals in a row the key runs eagerly for
// good, said once in the log (llama.cpp gives up on graphs after 4 failures). One exception: a
// recorded run that keeps a buffer it allocated alive past the close (a result the step
// allocates each call) left the step's last results in a buffer only the recording was to write;
// such a recording is refused (Errc::graph_state: the buffer outlived it), and, whatever refused
// it (that, a doom after the allocation), the step runs once more, eagerly, so what it produced
// last holds data: that run executed the step twice (stats().reruns). Other refusals (memory
// nodes, a side stream left unjoined, a doom) leave the warm-up's results and rerun nothing. A
// run never succeeds with a result that can't be used.
//
// A refusal is reachable: stats().refusals and stats().fallbacks count them, last_refusal() says
// why (a doomed recording's is Errc::doomed, naming what doomed it), and with
// options.fail_on_refusal a refusal is run()'s error instead of a fallback. A test asserts on it:
//
//   GraphCacheOptions options;
//   options.fail_on_refusal = true;                      // a refusal fails the run
//   GraphCache<int> cache(device, s, options);
//   Result<void> ran = cache.run(8, step);
//   ASSERT_TRUE(ran) << to_string(ran.error());          // the refusal, by name
//   EXPECT_EQ(cache.stats().fallbacks, 0u);
//   // Without the option a run that fell back succeeded, and its reason stays reachable:
//   if (const Error* why = cache.last_refusal()) ADD_FAILURE() << to_string(*why);
// invalidate(key) makes the key's next run re-record into the same executable (cuGraphExecUpdate
// when the topology allows: Device::end_capture(s, into)). record_all brings a key set up, on
// several threads if asked: this thread records every key while workers instantiate
// (docs/recording.md, "A bucket set at start-up").
//
// Every graph of a cache is recorded into one GraphPool on the cache's stream (unless
// options.share_pool is false), so their intermediates share memory; graphs are evicted least
// recently used first, to keep within max_graphs and byte_budget: the device memory the cache's
// graphs account for (GraphMemory: each graph's own buffers and the driver's bytes for its
// executable, and the pool's memory counted once). footprint() breaks that down; recorded on the
// fake (record_all), it is what the same keys will hold on the GPU (docs/performance.md,
// "Graph memory").
//
// What the budget can and can't count on getting back: evicting a graph gives back its own
// buffers at once and, on virtual memory, the pool's memory beyond what its remaining graphs use,
// to the granule, whatever order the keys were recorded in (on plain allocations, only the
// intermediates no remaining graph uses: graph_pool.h); the driver's bytes for the executable
// stay with the driver (measured on the H200: nothing comes back when an executable is destroyed;
// later executables reuse it), so eviction frees them for the cache's later graphs, not for
// other allocations. Whatever a run does (a refused recording, a step that throws), when it
// returns or unwinds its stream is not capturing. Not thread-safe: one cache per stream, used by
// the thread that issues that stream's work.
//
// Params and the cache combine: a launch recorded with Arg::param(p) takes p's value at the
// recording; cache.set(p, value) changes it for the next replays of every cached graph that took
// it (graphs that never took it are skipped) and for the eager fallbacks and later recordings
// (Param::set), so the graphs and the param stay in step:
//
//   Param<std::uint32_t> step = device.param<std::uint32_t>(0);   // bound in record()
//   if (Result<void> set = cache.set(step, 7u); !set) ...;
//
// graph(key) gives one key's graph (Graph::set on it changes that graph alone).
//
// A hit is a lookup, a store and Graph::replay (with all of its checks): the keys sit in a flat
// open-addressed table (linear probing, at most half full, Fibonacci-hashed home slots), each
// holding its hash and a pointer to its entry, and recency is a counter stamped on the entry;
// eviction, on the recording path only, scans for the oldest stamp. So a hit touches the table's
// slot, the entry and the graph's replay block, not a list's neighbours (the goal: within 50 ns of
// a raw cuGraphLaunch on the H200, docs/performance.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <graphcap/capture_options.h>
#include <graphcap/capture_sequence.h>
#include <graphcap/device.h>
#include <graphcap/graph.h>
#include <graphcap/graph_cache_options.h>
#include <graphcap/graph_pool.h>
#include <graphcap/log.h>
#include <graphcap/pending_graph.h>
#include <graphcap/result.h>
#include <graphcap/stream.h>
#include <graphcap/try.h>

namespace graphcap {

template <class Key, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>>
class GraphCache {
 public:
  GraphCache(Device& device, Stream& stream, GraphCacheOptions options = {})
      : device_(&device), stream_(&stream), options_(options), slots_(kInitialSlots) {}
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  ~GraphCache() { clear(); }

  // `record` is callable as Result<void>() and issues the step's work on the cache's stream.
  template <class Record>
  Result<void> run(const Key& key, Record&& record) {
    static_assert(std::is_invocable_r_v<Result<void>, Record&>,
                  "GraphCache::run: record must be callable as Result<void>()");
    const std::size_t hash = Hash{}(key);
    Entry* entry = find(key, hash);
    if (entry != nullptr) [[likely]] {
      entry->last_use = ++clock_;  // most recently used
      if (entry->graph && !entry->stale) [[likely]] {
        Result<void> replayed = entry->graph.replay();
        if (replayed) [[likely]] ++stats_.hits;
        return replayed;
      }
      if (entry->gave_up) {
        ++stats_.fallbacks;
        return record();
      }
    } else {
      entry = insert(key, hash);
      entry->last_use = ++clock_;
    }
    return record_entry(*entry, record);
  }

  // The key's next run re-records into its graph's executable. Errc::invalid_argument for a key
  // the cache does not hold.
  Result<void> invalidate(const Key& key) {
    Entry* found = find(key, Hash{}(key));
    if (found == nullptr) {
      return Error(Errc::invalid_argument, "GraphCache::invalidate: no such key in the cache");
    }
    Entry& entry = *found;
    entry.stale = true;
    entry.gave_up = false;  // asked to try again
    entry.refusals = 0;
    return {};
  }

  GraphCacheStats stats() const {
    GraphCacheStats stats = stats_;
    stats.bytes = bytes();
    return stats;
  }

  GraphCacheFootprint footprint() const {
    GraphCacheFootprint footprint;
    for (const Slot& slot : slots_) {
      if (!slot.entry || !slot.entry->graph) continue;
      const GraphMemory& memory = slot.entry->graph.report().memory;
      ++footprint.graphs;
      footprint.own_bytes += memory.own_bytes;
      footprint.driver_bytes += memory.driver_bytes;
      if (memory.driver_source == DriverBytesSource::model) ++footprint.modelled_graphs;
    }
    if (pool_) {
      footprint.pool_bytes = pool_->bytes_held();
      footprint.pool_on_virtual_memory = pool_->stats().virtual_memory;
    }
    return footprint;
  }

  // Runs every key of `keys` once, as run() does (recorded on its first run), `record` being
  // callable as Result<void>(const Key&); then the footprint. The first error stops it. On a
  // fake device this is the plan: the footprint the same keys will have on the GPU.
  template <class Keys, class Record>
  Result<GraphCacheFootprint> record_all(const Keys& keys, Record&& record) {
    for (const auto& key : keys) {
      if (Result<void> ran = run(key, [&] { return record(key); }); !ran) return ran.error();
    }
    return footprint();
  }
  // The same on options.threads host threads (RecordAllOptions), ending as one key at a time
  // would: the same graphs, pool share, footprint (driver bytes the model's), refusals and stats,
  // the step run once per key. A key whose instantiate is refused falls back alone (with
  // fail_on_refusal: the error); recording stops at the first error seen, the one returned is the
  // first in key order, and keys recorded already stay recorded. With max_graphs or byte_budget,
  // one key at a time whatever `threads` says: evictions decide what the next recording reuses.
  template <class Keys, class Record>
  Result<GraphCacheFootprint> record_all(const Keys& keys, Record&& record,
                                         RecordAllOptions options) {
    if (options.threads <= 1 || options_.max_graphs != 0 || options_.byte_budget != 0) {
      return record_all(keys, record);
    }
    InstantiateWorkers workers(*device_, options.threads - 1);
    std::deque<Pending> pending;  // recorded, in key order, their instantiate not yet finished
    std::optional<Error> failed;
    try {
      for (const auto& key : keys) {
        if (Result<void> ran = startup_run(key, record, workers, pending); !ran) {
          failed = ran.error();
          break;
        }
        // What a worker has instantiated already becomes its key's graph.
        if (Result<void> done = finish_pending(pending, true); !done) {
          failed = done.error();
          break;
        }
      }
    } catch (...) {
      (void)finish_pending(pending, false);  // the keys recorded before it stay recorded
      throw;
    }
    // Their keys came first: their error (fail_on_refusal) is the first in key order.
    if (Result<void> done = finish_pending(pending, false); !done) return done.error();
    if (failed) return *failed;
    return footprint();
  }
  // Why the cache's last refused recording was refused (the run fell back to the warm-up's
  // result, so run() returned success; with fail_on_refusal, run()'s error): the error
  // end_capture or begin_capture returned, or the recorded step's (the doom, Errc::doomed, when
  // the recording was doomed: what doomed it), naming the operation and the driver's error.
  // nullptr while no recording was refused.
  const Error* last_refusal() const noexcept { return last_refusal_ ? &*last_refusal_ : nullptr; }
  std::size_t size() const noexcept { return size_; }
  bool contains(const Key& key) const { return find(key, Hash{}(key)) != nullptr; }
  // Whether the key has a graph to replay.
  bool recorded(const Key& key) const {
    const Entry* found = find(key, Hash{}(key));
    return found != nullptr && static_cast<bool>(found->graph);
  }
  // The key's graph (nullptr when the cache holds none for it): for inspection (report(), dot())
  // and, non-const, for Graph::set on it; replaying it directly bypasses the cache's counters.
  // Valid until the key is recorded again, evicted or the cache cleared.
  const Graph* graph(const Key& key) const {
    const Entry* found = find(key, Hash{}(key));
    return found != nullptr && found->graph ? &found->graph : nullptr;
  }
  Graph* graph(const Key& key) {
    Entry* found = find(key, Hash{}(key));
    return found != nullptr && found->graph ? &found->graph : nullptr;
  }
  // Calls visit(key, graph) for every key that has a graph (in no particular order), for
  // inspection (a Param is patched in every cached graph by set()). `visit` must not run the cache.
  template <class Visit>
  void for_each_graph(Visit&& visit) {
    for (Slot& slot : slots_) {
      if (slot.entry && slot.entry->graph) {
        visit(static_cast<const Key&>(slot.entry->key), slot.entry->graph);
      }
    }
  }
  // Give `param` a new value in every cached graph that took it (Graph::set; graphs that never
  // took it are skipped) and its own (Param::set), so the eager fallbacks and later recordings
  // take it too. An empty param is Errc::invalid_argument, and nothing changes. A graph whose set
  // fails (a driver error: that graph keeps its old value) is re-recorded on its key's next run,
  // taking the new value; the first such error is returned, and every other graph is set.
  template <class T>
  Result<void> set(Param<T>& param, T value) {
    if (!param) return Error(Errc::invalid_argument, "GraphCache::set: an empty Param");
    param.set(value);
    std::optional<Error> failed;
    for (Slot& slot : slots_) {
      Entry* entry = slot.entry.get();
      if (entry == nullptr || !entry->graph || !entry->graph.took(param)) continue;
      if (Result<void> set = entry->graph.set(param, value); !set) {
        entry->stale = true;
        if (!failed) failed = set.error().context("GraphCache::set");
      }
    }
    if (failed) return *failed;
    return {};
  }
  // The pool the cache's graphs share (nullptr before the first recording, or without sharing).
  const GraphPool* pool() const noexcept { return pool_ ? &*pool_ : nullptr; }

  // Drops every graph (each waits for its replays) and forgets every key.
  void clear() noexcept {
    for (Slot& slot : slots_) slot.entry.reset();
    size_ = 0;
    entry_bytes_ = 0;
  }

 private:
  struct Entry {
    Key key;
    std::size_t hash = 0;
    Graph graph{};               // empty until recorded
    std::uint64_t last_use = 0;  // clock_ at its last run: the least recently used goes first
    std::size_t bytes = 0;       // the graph's own device bytes and driver bytes, in entry_bytes_
    unsigned refusals = 0;       // refused recordings in a row
    bool stale = false;          // invalidate(): re-record into graph
    bool gave_up = false;        // refused give_up_after times in a row: eager from now on
    bool pending = false;        // record_all closed it; its instantiate is not finished yet
  };
  // A slot of the table: empty (no entry), or a key's entry and its hash.
  struct Slot {
    std::size_t hash = 0;
    std::unique_ptr<Entry> entry;
  };
  static constexpr std::size_t kInitialSlots = 16;  // a power of two: shift_ starts at 64 - 4
  static_assert(kInitialSlots == std::size_t{1} << 4);

  // The slot a hash probes first: the top bits of its Fibonacci product.
  std::size_t home(std::size_t hash) const noexcept {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(hash) * 0x9E3779B97F4A7C15ull) >>
                                    shift_);
  }
  Entry* find(const Key& key, std::size_t hash) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = home(hash);; i = (i + 1) & mask) {  // ends: the table is at most half full
      const Slot& slot = slots_[i];
      if (!slot.entry) return nullptr;
      if (slot.hash == hash && KeyEqual{}(slot.entry->key, key)) return slot.entry.get();
    }
  }
  // A new key (not in the table).
  Entry* insert(const Key& key, std::size_t hash) {
    if ((size_ + 1) * 2 > slots_.size()) {
      std::vector<Slot> bigger(slots_.size() * 2);  // if this throws, nothing changed
      bigger.swap(slots_);
      --shift_;
      for (Slot& slot : bigger) {
        if (slot.entry) place(slot.hash, std::move(slot.entry));
      }
    }
    auto entry = std::make_unique<Entry>(Entry{key});
    entry->hash = hash;
    Entry* added = entry.get();
    place(hash, std::move(entry));
    ++size_;
    return added;
  }
  void place(std::size_t hash, std::unique_ptr<Entry> entry) noexcept {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(hash);
    while (slots_[i].entry) i = (i + 1) & mask;
    slots_[i].hash = hash;
    slots_[i].entry = std::move(entry);
  }
  // Drops the entry (its graph waits for its replays), closing the gap it leaves in its probe
  // run (backward-shift deletion: no tombstones).
  void erase(const Entry& victim) noexcept {
    const std::size_t mask = slots_.size() - 1;
    std::size_t hole = home(victim.hash);
    while (slots_[hole].entry.get() != &victim) hole = (hole + 1) & mask;
    slots_[hole].entry.reset();
    for (std::size_t j = (hole + 1) & mask; slots_[j].entry; j = (j + 1) & mask) {
      // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
      const std::size_t want = home(slots_[j].hash);
      if (((j - want) & mask) >= ((j - hole) & mask)) {
        slots_[hole] = std::move(slots_[j]);
        hole = j;
      }
    }
    --size_;
  }

  // Record the key's entry on the one capture sequence (capture_sequence.h): the warm-up is this
  // run's execution of the step, and `close` (callable as Result<void>(CaptureSequence&)) ends
  // the recording. Whatever leaves it (a return, a refusal that leaves the recording open, an
  // exception from the step), the cache's window is closed: its stream is never left capturing.
  // True: closed (the caller makes it the key's graph); false: the run fell back.
  template <class Record, class Close>
  Result<bool> record_entry(Entry& entry, Record& record, Close&& close) {
    CaptureOptions options;
    options.mode = options_.mode;
    options.claim_on_refusal = false;  // a refusal leaves the warm-up's results, which are valid
    if (options_.share_pool) {
      if (!pool_) {
        Result<GraphPool> pool = device_->create_graph_pool(*stream_, options_.pool);
        if (!pool) return pool.error().context("GraphCache: creating its graph pool");
        pool_.emplace(std::move(*pool));
      }
      options.pool = &*pool_;
    }
    CaptureSequence sequence(*device_, *stream_);
    Result<void> recorded = sequence.run(options, record, [&] { return close(sequence); });
    switch (sequence.failed_at()) {
      case CapturePhase::none:
        return true;
      case CapturePhase::prepare:
        return recorded.error().context("GraphCache");  // nothing ran
      case CapturePhase::warm_up:
        return recorded.error();  // the step itself failed, eagerly: as without a cache
      default:
        break;
    }
    GRAPHCAP_TRY(refused(entry, recorded.error()));
    if (sequence.kept_recorded_allocation()) {
      // The recorded run kept a buffer it allocated alive past the close (a result the step
      // allocates each call): whatever refused it, only the recording was to write that buffer,
      // so the step runs once more, eagerly, and what it produced last holds data.
      ++stats_.reruns;
      GRAPHCAP_TRY(record());
    }
    return false;
  }
  template <class Record>
  Result<void> record_entry(Entry& entry, Record& record) {
    GRAPHCAP_ASSIGN_OR_RETURN(const bool closed,
                              record_entry(entry, record, [&](CaptureSequence& sequence) {
                                return close(sequence, entry);
                              }));
    if (closed) recorded(entry);
    return {};
  }

  // End the recording into the entry: re-recorded into its graph when stale, else a new graph.
  Result<void> close(CaptureSequence& sequence, Entry& entry) {
    if (entry.graph && entry.stale) {
      if (Result<void> ended = sequence.end(entry.graph); !ended) return ended;  // still stale
      ++(entry.graph.report().updated ? stats_.updates : stats_.captures);
      return {};
    }
    Result<Graph> ended = sequence.end();
    if (!ended) return ended.error();
    entry.graph = std::move(*ended);
    ++stats_.captures;
    return {};
  }

  // The entry holds its recorded graph now.
  void recorded(Entry& entry) noexcept {
    entry.stale = false;
    entry.refusals = 0;
    // The graph's own bytes: its pool's shared memory is counted once for the whole cache.
    const GraphMemory& memory = entry.graph.report().memory;
    entry_bytes_ -= entry.bytes;
    entry.bytes = memory.own_bytes + memory.driver_bytes;
    entry_bytes_ += entry.bytes;
    evict(entry);
  }

  // A refused recording: the warm-up already ran the step, so the run succeeded eagerly (unless
  // options_.fail_on_refusal: then the refusal is the run's error). Its results stand (the
  // caller reruns the step when the recorded run kept a buffer it allocated).
  Result<void> refused(Entry& entry, const Error& why) {
    ++stats_.refusals;
    last_refusal_ = why.context("GraphCache: the recording was refused");
    if (options_.fail_on_refusal) return *last_refusal_;
    ++stats_.fallbacks;
    if (++entry.refusals >= options_.give_up_after && !entry.gave_up) {
      entry.gave_up = true;
      log(LogLevel::warn, "GraphCache: a key's recording was refused " +
                              std::to_string(entry.refusals) +
                              " times in a row; it runs eagerly from now on (invalidate(key) "
                              "tries again). The last refusal: " + why.message());
    }
    return {};
  }

  // ---- record_all on several threads: a key recorded, its instantiate still to finish ----
  struct Pending {
    Entry* entry;
    PendingGraph graph;
  };
  // One key: with a graph (or given up) as run() (a hit, a re-recording into it, a fallback);
  // else recorded and closed with its instantiate left to `workers`.
  template <class Record>
  Result<void> startup_run(const Key& key, Record& record, InstantiateWorkers& workers,
                           std::deque<Pending>& pending) {
    auto step = [&] { return record(key); };
    const std::size_t hash = Hash{}(key);
    Entry* entry = find(key, hash);
    // A key given twice: its first run's graph is finished before the second replays it.
    while (entry != nullptr && entry->pending) GRAPHCAP_TRY(finish_front(pending));
    if (entry != nullptr && (entry->graph || entry->gave_up)) return run(key, step);
    if (entry == nullptr) entry = insert(key, hash);
    entry->last_use = ++clock_;
    PendingGraph closed;
    GRAPHCAP_ASSIGN_OR_RETURN(const bool recorded,
                              record_entry(*entry, step, [&](CaptureSequence& sequence) {
                                Result<PendingGraph> ended = sequence.end_deferred();
                                if (!ended) return Result<void>(ended.error());
                                closed = std::move(*ended);
                                return Result<void>();
                              }));
    if (recorded) {
      workers.submit(closed);
      entry->pending = true;
      pending.push_back(Pending{entry, std::move(closed)});
    }
    return {};
  }
  // The first pending key's graph (waiting for its instantiate), or its refusal.
  Result<void> finish_front(std::deque<Pending>& pending) {
    Pending front = std::move(pending.front());
    pending.pop_front();
    Entry& entry = *front.entry;
    entry.pending = false;
    Result<Graph> graph = front.graph.finish();
    if (!graph) return refused(entry, graph.error());
    entry.graph = std::move(*graph);
    ++stats_.captures;
    recorded(entry);
    return {};
  }
  // Finish the pending keys in order (only those instantiated already, when `ready_only`); the
  // first error is returned.
  Result<void> finish_pending(std::deque<Pending>& pending, bool ready_only) {
    std::optional<Error> first;
    while (!pending.empty() && (!ready_only || pending.front().graph.ready())) {
      if (Result<void> done = finish_front(pending); !done && !first) first = done.error();
    }
    if (first) return *first;
    return {};
  }

  // Least recently used graphs go first; `keep` (just recorded) stays. Entries without a graph
  // (fallbacks, keys given up) hold no memory and stay.
  void evict(const Entry& keep) noexcept {
    auto over = [&] {
      return (options_.max_graphs != 0 && graphs() > options_.max_graphs) ||
             (options_.byte_budget != 0 && bytes() > options_.byte_budget);
    };
    while (over()) {
      const Entry* victim = nullptr;
      for (const Slot& slot : slots_) {
        const Entry* candidate = slot.entry.get();
        if (candidate == nullptr || candidate == &keep || !candidate->graph) continue;
        if (victim == nullptr || candidate->last_use < victim->last_use) victim = candidate;
      }
      if (victim == nullptr) return;
      entry_bytes_ -= victim->bytes;
      erase(*victim);
      ++stats_.evictions;
    }
  }

  // The cached graphs' device bytes, the pool's shared memory counted once.
  std::size_t bytes() const noexcept {
    return entry_bytes_ + (pool_ ? pool_->bytes_held() : std::size_t{0});
  }

  std::size_t graphs() const noexcept {
    std::size_t count = 0;
    for (const Slot& slot : slots_) count += slot.entry && slot.entry->graph ? 1 : 0;
    return count;
  }

  Device* device_;
  Stream* stream_;
  GraphCacheOptions options_;
  std::vector<Slot> slots_;           // a power of two of them, at most half in use
  unsigned shift_ = 64 - 4;           // 64 - log2(slots_.size())
  std::size_t size_ = 0;              // keys held
  std::uint64_t clock_ = 0;           // runs of held keys, for recency
  std::optional<GraphPool> pool_;
  GraphCacheStats stats_;
  std::optional<Error> last_refusal_;
  std::size_t entry_bytes_ = 0;  // the cached graphs' own and driver bytes (not the pool's)
};

}  // namespace graphcap
