// with_stream_fault: a failed wait's error, completed with the driver's own account of the fault
// (DriverApi's stream_fault hook: the fake names the violation; libcuda keeps none). Internal.
#pragma once

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/error.h>

namespace graphcap {

// `error` (of a wait on `stream`) with "; <the driver's account>" appended when the driver keeps
// one. Cold: only on a failed wait.
Error with_stream_fault(Error error, DriverApi& driver, CUstream stream);

}  // namespace graphcap
