#include "tests/storage/store_backends.hpp"

#include <stdexcept>

#include "storage/sqlite_job_store.hpp"

namespace kernelscan::testing {

std::vector<std::string> store_backends() {
  return {"sqlite"};
}

std::unique_ptr<job_store> make_store(const std::string& backend) {
  if (backend == "sqlite") return std::make_unique<sqlite_job_store>(":memory:");
  throw std::invalid_argument("no store backend " + backend);
}

}  // namespace kernelscan::testing
