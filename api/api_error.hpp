#pragma once
// The one error shape of the API, with an HTTP status:
//   {"error": {"type": "...", "message": "...", "details": [{"field": "...", "message": "..."}],
//              ...context}}
// `details` is always a list of field errors (what is wrong, and where: a spec field's JSON
// path, a query parameter's name, a device), and is left out when there is nothing to list.
// `context` adds named members that identify what the error is about (`job_id`, `job_status`);
// it is never a second shape of `details`. Thrown by request handling code; the HTTP layer turns
// it into the response.

#include <stdexcept>
#include <string>
#include <vector>

#include "api/field_errors.hpp"
#include "api/json.hpp"

namespace kernelscan {

class api_error : public std::runtime_error {
 public:
  api_error(int status, std::string type, const std::string& message,
            std::vector<field_error> details = {}, json context = json::object())
      : std::runtime_error(message),
        m_status(status),
        m_type(std::move(type)),
        m_details(std::move(details)),
        m_context(std::move(context)) {}

  int status() const { return m_status; }
  const std::string& type() const { return m_type; }
  const std::vector<field_error>& details() const { return m_details; }
  // Named members beside type, message and details (an object; empty when there are none).
  const json& context() const { return m_context; }
  json body() const;

 private:
  int m_status;
  std::string m_type;
  std::vector<field_error> m_details;
  json m_context;
};

json error_body(std::string_view type, std::string_view message,
                const std::vector<field_error>& details = {}, const json& context = nullptr);

}  // namespace kernelscan
