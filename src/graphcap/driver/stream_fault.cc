#include <graphcap/driver/stream_fault.h>

#include <string>

#include <graphcap/driver/driver_hooks.h>

namespace graphcap {

Error with_stream_fault(Error error, DriverApi& driver, CUstream stream) {
  std::string account = detail::DriverHooks::stream_fault(driver, stream);
  if (account.empty()) return error;
  return Error(error.code(), error.message() + "; the driver's account of the fault: " + account,
               error.driver_code());
}

}  // namespace graphcap
