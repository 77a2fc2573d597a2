// at_call: a public operation's result with its caller's line on a refusal (the operations that
// enter a recording take a defaulted std::source_location; capture::called_at formats it).
#pragma once

#include <graphcap/capture/operation_label.h>
#include <graphcap/result.h>

#include <source_location>
#include <utility>

namespace graphcap::detail {

template <class T>
Result<T> at_call(Result<T> result, const std::source_location& where) {
  if (result) [[likely]]
    return result;
  return capture::called_at(result.error(), where);
}

}  // namespace graphcap::detail
