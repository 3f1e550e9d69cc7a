#pragma once
// The store backends the shared storage suite runs against, each made fresh and empty for every
// test: SQLite in memory, and PostgreSQL in a new database of the test server.

#include <memory>
#include <string>
#include <vector>

#include "storage/job_store.hpp"

namespace kernelscan::testing {

// "sqlite", "postgresql".
std::vector<std::string> store_backends();
std::unique_ptr<job_store> make_store(const std::string& backend);

}  // namespace kernelscan::testing
