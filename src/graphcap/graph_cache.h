// GraphCache<Key>: one graph per key (a batch-size bucket, a shape), recorded lazily on the key's
// first run, replayed on every later one, with an eager fallback when a recording is refused.
//
//   GraphCache<std::size_t> cache(device, device.stream());
//   Result<void> done = cache.run(bucket, [&]() -> Result<void> { ...issue the step on the stream... });
//
// One run has the effect of exactly one execution of the step. On a key's first run the warm-up
// that primes the capture window *is* that execution (prepare_capture, record(), begin_capture,
// record() again into the recording, end_capture: the step was run once and recorded once); later
// runs replay. A refused recording (doomed, memory nodes, a failed driver call) leaves the warm-up's
// results in place (the cache's windows don't claim: the warm-up wrote those buffers), counts a
// fallback, and the key is tried again next time; after `give_up_after` refusals in a row the key
// runs eagerly for good, said once in the log (llama.cpp gives up on graphs after 4 failures).
// invalidate(key) makes the key's next run re-record into the same executable (cuGraphExecUpdate
// when the topology allows: Device::end_capture(s, into)).
//
// Every graph of a cache is recorded into one GraphPool on the cache's stream (unless
// options.share_pool is false), so their intermediates share memory; graphs are evicted least
// recently used first, to keep within max_graphs and byte_budget (the pinned bytes of the cache's
// graphs). Not thread-safe: one cache per stream, used by the thread that issues that stream's work.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <graphcap/capture_options.h>
#include <graphcap/device.h>
#include <graphcap/graph.h>
#include <graphcap/graph_pool.h>
#include <graphcap/log.h>
#include <graphcap/result.h>
#include <graphcap/stream.h>

namespace graphcap {

struct GraphCacheOptions {
  std::size_t byte_budget = 0;  // pinned bytes of the cached graphs, at most (0: no limit)
  std::size_t max_graphs = 0;   // graphs kept, at most (0: no limit)
  unsigned give_up_after = 4;   // refused recordings of one key in a row, then it runs eagerly
  bool share_pool = true;       // record every graph into one GraphPool on the cache's stream
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;  // each recording's capture mode
};

struct GraphCacheStats {
  std::size_t hits = 0;       // runs that replayed (a replay that failed is not counted)
  std::size_t captures = 0;   // graphs instantiated (first recordings, and re-recordings whose
                              // update the driver refused)
  std::size_t updates = 0;    // re-recordings applied by exec update
  std::size_t fallbacks = 0;  // runs whose step ran eagerly: a refused recording, or a key given up
  std::size_t evictions = 0;  // graphs dropped for the budget or the count
  std::size_t bytes = 0;      // pinned bytes of the cached graphs now
};

template <class Key, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>>
class GraphCache {
 public:
  GraphCache(Device& device, Stream& stream, GraphCacheOptions options = {})
      : device_(&device), stream_(&stream), options_(options) {}
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  ~GraphCache() { clear(); }

  // `record` is callable as Result<void>() and issues the step's work on the cache's stream.
  template <class Record>
  Result<void> run(const Key& key, Record&& record) {
    static_assert(std::is_invocable_r_v<Result<void>, Record&>,
                  "GraphCache::run: record must be callable as Result<void>()");
    auto found = index_.find(key);
    if (found != index_.end()) {
      lru_.splice(lru_.begin(), lru_, found->second);  // most recently used first
      Entry& entry = lru_.front();
      if (entry.graph && !entry.stale) {
        Result<void> replayed = entry.graph.replay();
        if (replayed) [[likely]] ++stats_.hits;
        return replayed;
      }
      if (entry.gave_up) {
        ++stats_.fallbacks;
        return record();
      }
    } else {
      lru_.push_front(Entry{key});
      index_.emplace(key, lru_.begin());
    }
    return record_front(record);
  }

  // The key's next run re-records into its graph's executable. Errc::invalid_argument for a key
  // the cache does not hold.
  Result<void> invalidate(const Key& key) {
    auto found = index_.find(key);
    if (found == index_.end()) {
      return Error(Errc::invalid_argument, "GraphCache::invalidate: no such key in the cache");
    }
    Entry& entry = *found->second;
    entry.stale = true;
    entry.gave_up = false;  // asked to try again
    entry.refusals = 0;
    return {};
  }

  GraphCacheStats stats() const {
    GraphCacheStats stats = stats_;
    stats.bytes = bytes_;
    return stats;
  }
  // Why the cache's last refused recording was refused (the run fell back to the warm-up's
  // result, so run() returned success): the error end_capture, begin_capture or the recorded step
  // returned, naming the operation and the driver's error. nullptr while no recording was refused.
  const Error* last_refusal() const noexcept { return last_refusal_ ? &*last_refusal_ : nullptr; }
  std::size_t size() const noexcept { return index_.size(); }
  bool contains(const Key& key) const { return index_.find(key) != index_.end(); }
  // Whether the key has a graph to replay.
  bool recorded(const Key& key) const {
    auto found = index_.find(key);
    return found != index_.end() && static_cast<bool>(found->second->graph);
  }
  // The key's graph (nullptr when the cache holds none for it): for inspection (report(), dot());
  // replaying it directly bypasses the cache's counters.
  const Graph* graph(const Key& key) const {
    auto found = index_.find(key);
    return found != index_.end() && found->second->graph ? &found->second->graph : nullptr;
  }
  // The pool the cache's graphs share (nullptr before the first recording, or without sharing).
  const GraphPool* pool() const noexcept { return pool_ ? &*pool_ : nullptr; }

  // Drops every graph (each waits for its replays) and forgets every key.
  void clear() noexcept {
    index_.clear();
    lru_.clear();
    bytes_ = 0;
  }

 private:
  struct Entry {
    Key key;
    Graph graph{};              // empty until recorded
    bool stale = false;         // invalidate(): re-record into graph
    bool gave_up = false;       // refused give_up_after times in a row: eager from now on
    unsigned refusals = 0;      // refused recordings in a row
    std::size_t bytes = 0;      // the graph's pinned bytes, counted in bytes_
  };
  using Lru = std::list<Entry>;

  // Record the front entry: the warm-up is this run's execution of the step.
  template <class Record>
  Result<void> record_front(Record& record) {
    Entry& entry = lru_.front();
    CaptureOptions options;
    options.mode = options_.mode;
    options.claim_on_refusal = false;  // a refusal leaves the warm-up's results, which are valid
    if (options_.share_pool) {
      if (!pool_) {
        Result<GraphPool> pool = device_->create_graph_pool(*stream_);
        if (!pool) return pool.error().context("GraphCache: creating its graph pool");
        pool_.emplace(std::move(*pool));
      }
      options.pool = &*pool_;
    }
    if (Result<void> prepared = device_->prepare_capture(*stream_, options); !prepared) {
      return prepared.error().context("GraphCache");  // nothing ran
    }
    if (Result<void> warm = record(); !warm) {
      (void)device_->abort_capture(*stream_);
      return warm;  // the step itself failed, eagerly: as it would have without a cache
    }
    if (Result<void> begun = device_->begin_capture(*stream_); !begun) {
      (void)device_->abort_capture(*stream_);  // if begin left the window prepared
      return refused(entry, begun.error());
    }
    if (Result<void> recorded = record(); !recorded) {
      (void)device_->abort_capture(*stream_);
      return refused(entry, recorded.error());
    }
    if (entry.graph && entry.stale) {
      if (Result<void> ended = device_->end_capture(*stream_, entry.graph); !ended) {
        return refused(entry, ended.error());  // the graph is unchanged, and still stale
      }
      ++(entry.graph.report().updated ? stats_.updates : stats_.captures);
    } else {
      Result<Graph> ended = device_->end_capture(*stream_);
      if (!ended) return refused(entry, ended.error());
      entry.graph = std::move(*ended);
      ++stats_.captures;
    }
    entry.stale = false;
    entry.refusals = 0;
    bytes_ -= entry.bytes;
    entry.bytes = entry.graph.report().pinned_bytes;
    bytes_ += entry.bytes;
    evict();
    return {};
  }

  // A refused recording: the warm-up already ran the step, so the run succeeded eagerly.
  Result<void> refused(Entry& entry, const Error& why) {
    ++stats_.fallbacks;
    last_refusal_ = why;
    if (++entry.refusals >= options_.give_up_after && !entry.gave_up) {
      entry.gave_up = true;
      log(LogLevel::warn, "GraphCache: a key's recording was refused " +
                              std::to_string(entry.refusals) +
                              " times in a row; it runs eagerly from now on (invalidate(key) "
                              "tries again). The last refusal: " + why.message());
    }
    return {};
  }

  // Least recently used graphs go first; the front entry (just recorded) stays.
  void evict() noexcept {
    auto over = [&] {
      return (options_.max_graphs != 0 && graphs() > options_.max_graphs) ||
             (options_.byte_budget != 0 && bytes_ > options_.byte_budget);
    };
    for (auto it = std::prev(lru_.end()); over() && it != lru_.begin();) {
      auto victim = it--;
      if (!victim->graph) continue;
      bytes_ -= victim->bytes;
      index_.erase(victim->key);
      lru_.erase(victim);
      ++stats_.evictions;
    }
  }

  std::size_t graphs() const noexcept {
    std::size_t count = 0;
    for (const Entry& entry : lru_) count += entry.graph ? 1 : 0;
    return count;
  }

  Device* device_;
  Stream* stream_;
  GraphCacheOptions options_;
  Lru lru_;
  std::unordered_map<Key, typename Lru::iterator, Hash, KeyEqual> index_;
  std::optional<GraphPool> pool_;
  GraphCacheStats stats_;
  std::optional<Error> last_refusal_;
  std::size_t bytes_ = 0;
};

}  // namespace graphcap
