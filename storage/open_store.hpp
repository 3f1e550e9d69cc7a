#pragma once
// Opens the store a daemon is configured with: PostgreSQL when a database URL is given (a fleet
// of daemons sharing it), else SQLite in the data directory.

#include <memory>
#include <string>

#include "storage/job_store.hpp"

namespace kernelscan {

struct store_config {
  std::string database_url;  // postgresql://... or postgres://...; empty: SQLite
  std::string password;      // for PostgreSQL, read from a file; empty: libpq's own sources
  std::size_t pool_size = 8;
  std::string sqlite_path;  // when database_url is empty
};

// Throws storage_error, or std::invalid_argument for a URL that is not PostgreSQL's.
std::unique_ptr<job_store> open_store(const store_config& config);

// The URL with any password replaced by "***", for logs and error messages.
std::string redact_database_url(const std::string& url);

}  // namespace kernelscan
