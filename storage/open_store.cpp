#include "storage/open_store.hpp"

#include <stdexcept>

#include "storage/postgres_job_store.hpp"
#include "storage/sqlite_job_store.hpp"

namespace kernelscan {

std::unique_ptr<job_store> open_store(const store_config& config) {
  if (config.database_url.empty()) return std::make_unique<sqlite_job_store>(config.sqlite_path);
  const auto& url = config.database_url;
  if (url.rfind("postgresql://", 0) != 0 && url.rfind("postgres://", 0) != 0) {
    throw std::invalid_argument("--database must be a postgresql:// URL, got \"" +
                                redact_database_url(url) + "\"");
  }
  postgres_options options;
  options.url = url;
  options.password = config.password;
  options.pool_size = config.pool_size;
  return std::make_unique<postgres_job_store>(options);
}

std::string redact_database_url(const std::string& url) {
  // scheme://user:password@host...: the password is between the first ':' after the scheme and
  // the last '@' before the path.
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto authority = scheme + 3;
  const auto end = url.find_first_of("/?", authority);
  const auto at = url.rfind('@', end == std::string::npos ? url.size() : end);
  std::string out = url;
  if (at != std::string::npos && at > authority) {
    const auto colon = url.find(':', authority);
    if (colon != std::string::npos && colon < at)
      out = url.substr(0, colon + 1) + "***" + url.substr(at);
  }
  // A password may also come as a query parameter.
  for (const char* key : {"password=", "sslpassword="}) {
    std::size_t at_key = 0;
    while ((at_key = out.find(key, at_key)) != std::string::npos) {
      if (at_key > 0 && out[at_key - 1] != '?' && out[at_key - 1] != '&') {
        at_key += 1;
        continue;
      }
      const auto start = at_key + std::string_view(key).size();
      const auto stop = out.find('&', start);
      out = out.substr(0, start) + "***" + (stop == std::string::npos ? "" : out.substr(stop));
      at_key = start;
    }
  }
  return out;
}

}  // namespace kernelscan
