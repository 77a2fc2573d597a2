// DeviceCore's side of several devices: names for messages, and the peer access its context has.
#include <algorithm>
#include <string>

#include <graphcap/detail/device_core.h>

namespace graphcap::detail {

std::string DeviceCore::name() const { return "device " + std::to_string(options_.ordinal); }

std::string DeviceCore::another_device(const DeviceCore& other) const {
  if (other.options_.ordinal == options_.ordinal) {
    return "another device (a second Device of ordinal " + std::to_string(options_.ordinal) + ")";
  }
  return "another device (" + other.name() + "; this is " + name() + ")";
}

bool DeviceCore::peer_enabled(const DeviceCore& peer) const {
  std::lock_guard lock(peers_mutex_);
  return std::find(peers_.begin(), peers_.end(), peer.id()) != peers_.end();
}

void DeviceCore::set_peer_enabled(const DeviceCore& peer) {
  std::lock_guard lock(peers_mutex_);
  if (std::find(peers_.begin(), peers_.end(), peer.id()) == peers_.end()) {
    peers_.push_back(peer.id());
  }
}

}  // namespace graphcap::detail
