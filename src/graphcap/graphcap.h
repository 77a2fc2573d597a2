// graphcap: CUDA graph capture, tested first and off the GPU. The umbrella header: the whole
// public API of graphcap::graphcap (every installed header under graphcap/, except the fake
// driver's, which are graphcap::fake's: <graphcap/fake/fake_driver.h>, mock_driver.h,
// fault_injecting_driver.h, and <graphcap/kernel.h> for kernel sources).
#pragma once

#include <graphcap/arg.h>
#include <graphcap/buffer.h>
#include <graphcap/capture/capture_state.h>
#include <graphcap/capture/graph_report.h>
#include <graphcap/capture_options.h>
#include <graphcap/capture_scope.h>
#include <graphcap/capture_sequence.h>
#include <graphcap/condition.h>
#include <graphcap/device.h>
#include <graphcap/device_limits.h>
#include <graphcap/device_options.h>
#include <graphcap/driver/cuda_driver.h>
#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/entry_points.h>
#include <graphcap/driver/error_names.h>
#include <graphcap/driver/forwarding_driver.h>
#include <graphcap/driver/launch_dims.h>
#include <graphcap/error.h>
#include <graphcap/event.h>
#include <graphcap/graph.h>
#include <graphcap/graph_cache.h>
#include <graphcap/graph_pool.h>
#include <graphcap/launch_options.h>
#include <graphcap/log.h>
#include <graphcap/loop.h>
#include <graphcap/memory/pool_stats.h>
#include <graphcap/memory_stats.h>
#include <graphcap/module.h>
#include <graphcap/param.h>
#include <graphcap/pending_graph.h>
#include <graphcap/result.h>
#include <graphcap/stream.h>
#include <graphcap/try.h>
#include <graphcap/version.h>
