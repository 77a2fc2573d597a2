// Warnings and diagnostics go through one replaceable sink. The default writes to stderr, filtered
// by the GRAPHCAP_LOG environment variable (error, warn, info, debug; warn when unset).
#pragma once

#include <functional>
#include <string_view>

namespace graphcap {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

const char* to_string(LogLevel level) noexcept;

using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// Replace the sink for every message from now on (all levels reach a custom sink; it filters).
// An empty function restores the default. Returns the sink that was installed before.
LogSink set_log_sink(LogSink sink);

// Whether a message of `level` would reach anyone: a custom sink is installed (it sees every
// level), or GRAPHCAP_LOG lets the level through. Cheap: for skipping the building of messages.
bool log_enabled(LogLevel level) noexcept;

// Send a message to the sink. Never throws: a throwing sink is ignored.
void log(LogLevel level, std::string_view message) noexcept;

}  // namespace graphcap
