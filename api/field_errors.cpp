#include "api/field_errors.hpp"

#include "api/detail/utf8.hpp"

namespace kernelscan {
namespace {

// An answer lists this many problems at most (a body of 200,000 unknown fields made an answer
// of 47 MB), the last entry saying how many more there were; and quotes this much of a field's
// path or of a message (a key of a megabyte came back twice).
constexpr std::size_t k_max_listed = 100;
constexpr std::size_t k_max_field_bytes = 256;
constexpr std::size_t k_max_message_bytes = 2048;

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

std::string shortened(const std::string& s, std::size_t most) {
  if (s.size() <= most) return s;
  return detail::utf8_prefix(s, most) + "…";
}

std::vector<field_error> listed(std::vector<field_error> errors) {
  const std::size_t all = errors.size();
  if (all > k_max_listed) errors.resize(k_max_listed);
  for (auto& e : errors) {
    e.field = shortened(e.field, k_max_field_bytes);
    e.message = shortened(e.message, k_max_message_bytes);
  }
  if (all > k_max_listed) {
    errors.push_back(
        {"", "and " + std::to_string(all - k_max_listed) + " more problems, not listed"});
  }
  return errors;
}

}  // namespace

validation_error::validation_error(std::vector<field_error> errors)
    : std::runtime_error(shortened(summary(errors), k_max_field_bytes + k_max_message_bytes)),
      m_errors(listed(std::move(errors))) {}

}  // namespace kernelscan
