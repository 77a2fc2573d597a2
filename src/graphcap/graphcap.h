// graphcap: CUDA graph capture, tested first and off the GPU. The umbrella header.
#pragma once

#include <graphcap/arg.h>
#include <graphcap/buffer.h>
#include <graphcap/capture/capture_state.h>
#include <graphcap/capture/graph_report.h>
#include <graphcap/capture_options.h>
#include <graphcap/capture_scope.h>
#include <graphcap/device.h>
#include <graphcap/device_limits.h>
#include <graphcap/device_options.h>
#include <graphcap/driver/cuda_driver.h>
#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/error_names.h>
#include <graphcap/driver/forwarding_driver.h>
#include <graphcap/driver/launch_dims.h>
#include <graphcap/error.h>
#include <graphcap/event.h>
#include <graphcap/graph.h>
#include <graphcap/graph_pool.h>
#include <graphcap/log.h>
#include <graphcap/memory_stats.h>
#include <graphcap/module.h>
#include <graphcap/param.h>
#include <graphcap/result.h>
#include <graphcap/stream.h>
