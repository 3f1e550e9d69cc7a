#pragma once
// The store backends the shared storage suite runs against, each made fresh and empty for every
// test: SQLite in memory, and PostgreSQL in a new database of the test server (dropped again
// when the test ends).

#include <memory>
#include <string>
#include <vector>

#include "storage/job_store.hpp"

namespace kernelscan::testing {

// "sqlite", "postgresql".
std::vector<std::string> store_backends();

class test_store {
 public:
  explicit test_store(const std::string& backend);
  test_store(const test_store&) = delete;
  test_store& operator=(const test_store&) = delete;
  ~test_store();

  job_store& operator*() const { return *m_store; }
  // Another store on the same database: a second daemon of a fleet (PostgreSQL only).
  std::unique_ptr<job_store> open_another() const;
  const std::string& database_url() const { return m_url; }
  // Closes the store and opens it again (PostgreSQL: as a daemon restarting would).
  void reopen();

 private:
  std::string m_url;  // PostgreSQL
  std::unique_ptr<job_store> m_store;
};

}  // namespace kernelscan::testing
