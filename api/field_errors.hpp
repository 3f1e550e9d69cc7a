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

// Thrown when a request fails validation; holds the problems found, in document order: the
// first hundred, then one saying how many more there were, each path and message cut short
// past a few kilobytes.
class validation_error : public std::runtime_error {
 public:
  explicit validation_error(std::vector<field_error> errors);
  const std::vector<field_error>& errors() const { return m_errors; }

 private:
  std::vector<field_error> m_errors;
};

}  // namespace kernelscan
