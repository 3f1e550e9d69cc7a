#include "api/field_errors.hpp"

namespace kernelscan {
namespace {

std::string summary(const std::vector<field_error>& errors) {
  if (errors.empty()) return "invalid request";
  std::string out = errors.front().field.empty()
                        ? errors.front().message
                        : errors.front().field + ": " + errors.front().message;
  if (errors.size() > 1) {
    out += " (and " + std::to_string(errors.size() - 1) + " more problem" +
           (errors.size() > 2 ? "s" : "") + ")";
  }
  return out;
}

}  // namespace

validation_error::validation_error(std::vector<field_error> errors)
    : std::runtime_error(summary(errors)), m_errors(std::move(errors)) {}

}  // namespace kernelscan
