#include "server/config.hpp"

#include <stdexcept>

namespace kernelscan {

bool serves_mock_devices(const serve_config& config, std::size_t devices_served) {
  return config.engine == "mock" || config.engine == "all" ||
         (config.engine == "auto" && devices_served == 0);
}

std::pair<std::string, int> split_listen(const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw std::invalid_argument("--listen must be HOST:PORT, got \"" + listen + "\"");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1]:8080
  }
  int port = -1;
  try {
    std::size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535) {
    throw std::invalid_argument("--listen port must be 0-65535, got \"" + listen.substr(colon + 1) +
                                "\"");
  }
  return {host, port};
}

}  // namespace kernelscan
