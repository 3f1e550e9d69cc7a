#include "api/api_error.hpp"

namespace kernelscan {

json error_body(std::string_view type, std::string_view message,
                const std::vector<field_error>& details, const json& context) {
  json e = {{"type", type}, {"message", message}};
  if (!details.empty()) {
    json list = json::array();
    for (const auto& d : details)
      list.push_back({{"field", d.field}, {"message", d.message}});
    e["details"] = std::move(list);
  }
  if (context.is_object()) {
    for (const auto& [key, value] : context.items()) {
      if (key != "type" && key != "message" && key != "details") e[key] = value;
    }
  }
  return {{"error", std::move(e)}};
}

json api_error::body() const {
  return error_body(m_type, what(), m_details, m_context);
}

}  // namespace kernelscan
