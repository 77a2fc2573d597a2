// Device: several devices together: peer access queries and enabling (the checks of objects of
// another device live with each operation; peer copies in device_copy.cc).
#include <string>

#include <graphcap/detail/device_core.h>
#include <graphcap/device.h>
#include <graphcap/try.h>

namespace graphcap {
namespace {

Result<void> check_peer(const detail::DeviceCore& here, const detail::DeviceCore& peer,
                        const char* operation) {
  GRAPHCAP_TRY(here.check_open(operation));
  if (&peer.driver() != &here.driver()) {
    return Error(Errc::invalid_argument,
                 std::string(operation) + ": the peer device is open on another driver");
  }
  if (!peer.is_open()) {
    return Error(Errc::graph_state,
                 std::string(operation) + ": the peer (" + peer.name() + ") is closed");
  }
  return {};
}

}  // namespace

void Device::context_changed() noexcept { detail::t_bound_device = 0; }

Result<bool> Device::can_access_peer(const Device& peer) const {
  GRAPHCAP_TRY(check_peer(*core_, *peer.core_, "can_access_peer"));
  int can_access = 0;
  if (CUresult result =
          core_->driver().cuDeviceCanAccessPeer(&can_access, core_->device(), peer.core_->device());
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuDeviceCanAccessPeer", result).context("can_access_peer");
  }
  return can_access != 0;
}

Result<void> Device::enable_peer_access(const Device& peer) {
  GRAPHCAP_TRY(check_peer(*core_, *peer.core_, "enable_peer_access"));
  if (peer.ordinal() == ordinal()) {
    return Error(Errc::invalid_argument,
                 "enable_peer_access: " + core_->name() + " is not a peer of itself (both Devices "
                 "are of ordinal " + std::to_string(ordinal()) + ")");
  }
  if (core_->peer_enabled(*peer.core_)) return {};
  GRAPHCAP_TRY(core_->bind_thread());
  const CUresult result = core_->driver().cuCtxEnablePeerAccess(peer.core_->context(), 0);
  // Already enabled (by an earlier Device of this ordinal, or outside graphcap): what was asked.
  if (result != CUDA_SUCCESS && result != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
    return Error::from_driver("cuCtxEnablePeerAccess", result)
        .context("enable_peer_access from " + core_->name() + " to " + peer.core_->name());
  }
  core_->set_peer_enabled(*peer.core_);
  return {};
}

}  // namespace graphcap
