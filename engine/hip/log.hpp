#pragma once
// Logging for the files nvcc compiles: spdlog's headers do not compile under nvcc's C++20, so
// those files hand finished messages to these functions, which a g++-compiled file sends to
// spdlog.

#include <string>

namespace kernelscan::gpu {

// Whether debug messages are logged: a file builds one only then.
bool debug_enabled();
void log_debug(const std::string& message);
void log_info(const std::string& message);
void log_warn(const std::string& message);
void log_error(const std::string& message);

}  // namespace kernelscan::gpu
