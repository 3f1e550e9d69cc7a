#include "api/api_error.hpp"

namespace kernelscan {

json error_body(std::string_view type, std::string_view message, const json& details) {
  json e = {{"type", type}, {"message", message}};
  if (!details.is_null()) e["details"] = details;
  return {{"error", std::move(e)}};
}

json api_error::body() const {
  return error_body(m_type, what(), m_details);
}

}  // namespace kernelscan
