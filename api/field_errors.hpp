#pragma once
// Validation errors that name the offending field by its JSON path ("kernel.args[2].count").

#include <stdexcept>
#include <string>
#include <vector>

namespace kernelscan {

struct field_error {
  std::string field;
  std::string message;
};

// Thrown when a request fails validation; holds every problem found, in document order.
class validation_error : public std::runtime_error {
 public:
  explicit validation_error(std::vector<field_error> errors);
  const std::vector<field_error>& errors() const { return m_errors; }

 private:
  std::vector<field_error> m_errors;
};

}  // namespace kernelscan
