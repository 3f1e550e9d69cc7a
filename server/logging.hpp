#pragma once
// Logging for the daemon and its workers: spdlog to stderr, as text for people or as one JSON
// object per line for log shippers ({"time","level","logger","pid","msg"}).
// Call once at start-up, before other threads exist.

#include <string>

namespace kernelscan {

// `format`: "text" or "json". Throws std::invalid_argument for anything else.
void setup_logging(const std::string& logger_name, const std::string& level,
                   const std::string& format);

}  // namespace kernelscan
