#pragma once
// A failed store operation, whichever database is behind the store. `unavailable()` is true for
// conditions outside the program's control (a full disk, an I/O error, a locked or read-only
// file, a database server that cannot be reached or is restarting) that the API reports as 503
// and the scheduler retries; false for everything else (a bug, a schema the store does not
// know), reported as 500.

#include <stdexcept>
#include <string>

namespace kernelscan {

class storage_error : public std::runtime_error {
 public:
  storage_error(const std::string& message, bool unavailable)
      : std::runtime_error(message), m_unavailable(unavailable) {}
  bool unavailable() const { return m_unavailable; }

 private:
  bool m_unavailable;
};

}  // namespace kernelscan
