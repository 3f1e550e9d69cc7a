#include "tests/storage/store_backends.hpp"

#include <stdexcept>

#include "storage/postgres_job_store.hpp"
#include "storage/sqlite_job_store.hpp"
#include "tests/support/postgres_server.hpp"

namespace kernelscan::testing {

std::vector<std::string> store_backends() {
  return {"sqlite", "postgresql"};
}

test_store::test_store(const std::string& backend) {
  if (backend == "sqlite") {
    m_store = std::make_unique<sqlite_job_store>(":memory:");
  } else if (backend == "postgresql") {
    m_url = create_database();
    m_store = open_another();
  } else {
    throw std::invalid_argument("no store backend " + backend);
  }
}

test_store::~test_store() {
  m_store.reset();
  if (!m_url.empty()) drop_database(m_url);
}

void test_store::reopen() {
  m_store.reset();
  m_store = open_another();
}

std::unique_ptr<job_store> test_store::open_another() const {
  if (m_url.empty()) throw std::logic_error("only a PostgreSQL store can be opened twice");
  postgres_options options;
  options.url = m_url;
  options.pool_size = 4;
  return std::make_unique<postgres_job_store>(options);
}

}  // namespace kernelscan::testing
