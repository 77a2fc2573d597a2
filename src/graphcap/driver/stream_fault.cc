#include <graphcap/driver/stream_fault.h>

#include <string>

namespace graphcap {

Error with_stream_fault(Error error, DriverApi& driver, CUstream stream) {
  std::string account = driver.stream_fault(stream);
  if (account.empty()) return error;
  return Error(error.code(), error.message() + "; the driver's account of the fault: " + account,
               error.driver_code());
}

}  // namespace graphcap
