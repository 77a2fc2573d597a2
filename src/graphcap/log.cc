#include <graphcap/log.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace graphcap {
namespace {

LogLevel threshold_from_environment() {
  const char* value = std::getenv("GRAPHCAP_LOG");
  if (value == nullptr) return LogLevel::warn;
  if (std::strcmp(value, "error") == 0) return LogLevel::error;
  if (std::strcmp(value, "info") == 0) return LogLevel::info;
  if (std::strcmp(value, "debug") == 0) return LogLevel::debug;
  return LogLevel::warn;
}

// GRAPHCAP_LOG, read once at load (a function-local static's guard was a third of
// log_enabled's instructions and four cache lines on the eager launch path).
const LogLevel g_threshold = threshold_from_environment();

LogLevel threshold() { return g_threshold; }

// The most verbose level anyone receives: the threshold, or every level while a custom sink is
// installed. One load answers log_enabled.
std::atomic<int> g_enabled{static_cast<int>(g_threshold)};

void default_sink(LogLevel level, std::string_view message) {
  if (level > threshold()) return;
  std::string line = "graphcap ";
  line += to_string(level);
  line += ": ";
  line += message;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

struct SinkSlot {
  std::mutex mutex;
  std::shared_ptr<const LogSink> sink;
};

SinkSlot& slot() {
  static SinkSlot instance;
  return instance;
}

}  // namespace

const char* to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warn";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
  }
  return "unknown";
}

LogSink set_log_sink(LogSink sink) {
  auto replacement = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  std::lock_guard lock(slot().mutex);
  g_enabled.store(static_cast<int>(replacement != nullptr ? LogLevel::debug : threshold()),
                  std::memory_order_release);
  std::shared_ptr<const LogSink> previous = std::exchange(slot().sink, std::move(replacement));
  return previous ? *previous : LogSink{};
}

bool log_enabled(LogLevel level) noexcept {
  return static_cast<int>(level) <= g_enabled.load(std::memory_order_acquire);
}

void log(LogLevel level, std::string_view message) noexcept {
  try {
    std::shared_ptr<const LogSink> sink;
    {
      std::lock_guard lock(slot().mutex);
      sink = slot().sink;
    }
    if (sink) {
      (*sink)(level, message);
    } else {
      default_sink(level, message);
    }
  } catch (...) {
    // A sink that throws loses its message; logging must never fail the caller.
  }
}

}  // namespace graphcap
