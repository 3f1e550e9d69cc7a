#include "engine/hip/log.hpp"

#include <spdlog/spdlog.h>

namespace kernelscan::gpu {

bool debug_enabled() {
  return spdlog::should_log(spdlog::level::debug);
}
void log_debug(const std::string& message) {
  spdlog::debug("{}", message);
}
void log_info(const std::string& message) {
  spdlog::info("{}", message);
}
void log_warn(const std::string& message) {
  spdlog::warn("{}", message);
}
void log_error(const std::string& message) {
  spdlog::error("{}", message);
}

}  // namespace kernelscan::gpu
