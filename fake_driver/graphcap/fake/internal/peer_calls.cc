// Peer access between devices: which pairs may access each other's memory
// (FakeDriverOptions::peer_access), and the access the current context has enabled to others'.
// As CUDA documents it: a device is not a peer of itself; access is per ordered pair of contexts,
// enabled once (a second enable is CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED), and ends with either
// context (contexts.cc: destroy_context forgets it).
#include <graphcap/fake/internal/fake_state.h>

namespace graphcap::fake {

CUresult FakeState::cuDeviceCanAccessPeer(int* can_access, CUdevice device, CUdevice peer) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (can_access == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int devices = static_cast<int>(contexts_.size());
  if (device < 0 || device >= devices || peer < 0 || peer >= devices) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *can_access = device != peer && options_.peer_access ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  Context* current = nullptr;
  if (CUresult r = need_context(&current); r != CUDA_SUCCESS) return r;
  Context* target = peer == nullptr ? nullptr : find_context(peer);
  // Measured on the H200 (graphcap-fidelity, 2026-12-03): the peer first (NULL with flags 1 is
  // 201), then the flags (the current context with flags 1 is 1), and the current context itself
  // is 217, not 201.
  if (target == nullptr || target->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (target == current) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (!options_.peer_access) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (!current->peers.insert(target->device).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

}  // namespace graphcap::fake
