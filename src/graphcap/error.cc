#include <graphcap/error.h>

#include <graphcap/driver/error_names.h>

namespace graphcap {

const char* to_string(Errc code) noexcept {
  switch (code) {
    case Errc::driver: return "driver";
    case Errc::graph_state: return "graph_state";
    case Errc::doomed: return "doomed";
    case Errc::failed_buffer: return "failed_buffer";
    case Errc::out_of_memory: return "out_of_memory";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::driver_not_found: return "driver_not_found";
  }
  return "unknown";
}

Error::Error(Errc code, std::string message, CUresult driver_code)
    : code_(code), driver_code_(driver_code), message_(std::move(message)) {}

Error Error::from_driver(std::string_view entry_point, CUresult code) {
  std::string message(entry_point);
  message += " failed: ";
  message += describe_cu_result(code);
  return Error(code == CUDA_ERROR_OUT_OF_MEMORY ? Errc::out_of_memory : Errc::driver,
               std::move(message), code);
}

Error Error::context(std::string_view operation) const {
  std::string message(operation);
  message += ": ";
  message += message_;
  return Error(code_, std::move(message), driver_code_);
}

Error Error::with_code(Errc code) const { return Error(code, message_, driver_code_); }

std::string to_string(const Error& error) {
  std::string text = to_string(error.code());
  text += ": ";
  text += error.message();
  return text;
}

}  // namespace graphcap
