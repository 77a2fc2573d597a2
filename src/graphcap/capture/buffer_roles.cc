#include <graphcap/capture/buffer_roles.h>

#include <algorithm>

namespace graphcap::capture {
namespace {

void dedupe_list(std::vector<std::weak_ptr<memory::BufferState>>& list) {
  std::owner_less<std::weak_ptr<memory::BufferState>> less;
  std::sort(list.begin(), list.end(), less);
  list.erase(std::unique(list.begin(), list.end(),
                         [&](const auto& a, const auto& b) { return !less(a, b) && !less(b, a); }),
             list.end());
}

}  // namespace

void BufferRoles::fail_writes(const Error& error) const {
  for (const auto& weak : writes) {
    if (auto buffer = weak.lock()) buffer->fail(error);
  }
}

std::optional<Error> BufferRoles::first_failed_read() const {
  for (const auto& weak : reads) {
    auto buffer = weak.lock();
    if (!buffer) continue;
    if (std::optional<Error> failure = buffer->failure()) return failure;
  }
  return std::nullopt;
}

void BufferRoles::clear_produced() const {
  for (const auto& weak : produces) {
    if (auto buffer = weak.lock()) buffer->clear_failure();
  }
}

void BufferRoles::recording_closed(std::uint64_t recording, bool made_graph,
                                   const std::vector<const memory::SliceOwner*>& sides,
                                   const memory::SliceOwner& origin,
                                   std::uint64_t sequence) const {
  for (const auto* list : {&reads, &writes}) {
    for (const auto& weak : *list) {
      if (auto buffer = weak.lock()) {
        buffer->recording_closed(recording, made_graph, sides, origin, sequence);
      }
    }
  }
}

void BufferRoles::dedupe() {
  dedupe_list(reads);
  dedupe_list(writes);
  dedupe_list(produces);
}

}  // namespace graphcap::capture
