#pragma once
// The one error shape of the API: {"error": {"type", "message", "details"}} with an HTTP status.
// Thrown by request handling code; the HTTP layer turns it into the response.

#include <stdexcept>
#include <string>

#include "api/json.hpp"

namespace kernelscan {

class api_error : public std::runtime_error {
 public:
  api_error(int status, std::string type, const std::string& message, json details = nullptr)
      : std::runtime_error(message),
        m_status(status),
        m_type(std::move(type)),
        m_details(std::move(details)) {}

  int status() const { return m_status; }
  const std::string& type() const { return m_type; }
  const json& details() const { return m_details; }
  json body() const;

 private:
  int m_status;
  std::string m_type;
  json m_details;
};

json error_body(std::string_view type, std::string_view message, const json& details = nullptr);

}  // namespace kernelscan
