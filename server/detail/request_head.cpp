#include "server/detail/request_head.hpp"

#include <algorithm>
#include <cstring>

#include "engine/text_list.hpp"

namespace kernelscan::detail {

namespace {

// A head is kept between the requests of a connection; one that grew past this (a head takes
// at most 64 KiB) is given back rather than held while the connection idles.
constexpr std::size_t k_kept_capacity = 8 * 1024;

}  // namespace

bool is_tchar(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

void request_head::clear() {
  if (m_text.capacity() > k_kept_capacity) {
    std::string().swap(m_text);
  } else {
    m_text.clear();
  }
  m_flaw = flaw::none;
  m_flaw_line = 0;
  m_line = 1;
  m_column = 0;
  m_after_cr = false;
  m_in_name = true;
  m_value_seen = false;
  m_percent = false;
  m_empty_value = false;
}

void request_head::note(flaw f) {
  if (m_flaw != flaw::none) return;
  m_flaw = f;
  m_flaw_line = m_line;
}

void request_head::take(std::string_view bytes) {
  m_text.append(bytes);
  for (const char c : bytes) {
    if (m_after_cr && c != '\n') note(flaw::bare_cr);
    if (c == '\n') {
      if (!m_after_cr) {
        note(flaw::bare_lf);
      } else if (m_line > 1 && m_in_name && m_column > 1) {
        note(flaw::no_colon);  // a line with more than its CR, and no colon
      } else if (m_line > 1 && !m_in_name && !m_value_seen) {
        m_empty_value = true;
      }
      ++m_line;
      m_column = 0;
      m_after_cr = false;
      m_in_name = true;
      m_value_seen = false;
      continue;
    }
    if (c == '\0') note(flaw::nul);
    const bool header_line = m_line > 1;
    if (header_line && c == '%') m_percent = true;
    if (header_line && !m_in_name && c != ' ' && c != '\t' && c != '\r') m_value_seen = true;
    if (header_line && m_column == 0 && (c == ' ' || c == '\t')) {
      note(flaw::folded_line);
    } else if (header_line && m_in_name && c != '\r') {
      if (c == ':') {
        m_in_name = false;
        if (m_column == 0) note(flaw::bad_field_name);
      } else if (!is_tchar(c)) {
        note(flaw::bad_field_name);
      }
    }
    m_after_cr = c == '\r';
    ++m_column;
  }
}

std::string request_head::describe_flaw() const {
  const std::string line = "line " + std::to_string(m_flaw_line) + " of the request's head ";
  switch (m_flaw) {
    case flaw::none:
      return {};
    case flaw::bare_lf:
      return line + "ends in a bare LF (lines end in CRLF)";
    case flaw::bare_cr:
      return line + "has a CR that is not followed by LF";
    case flaw::nul:
      return line + "has a NUL byte";
    case flaw::folded_line:
      return line + "begins with whitespace (obsolete line folding is not accepted)";
    case flaw::bad_field_name:
      return line + "has a field name that is not a token (no whitespace may precede its colon)";
    case flaw::no_colon:
      return line + "is not a header field (name: value)";
  }
  return {};
}

std::vector<std::pair<std::string_view, std::string_view>> request_head::fields() const {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  std::string_view rest = m_text;
  const auto request_line_end = rest.find("\r\n");
  if (request_line_end == std::string_view::npos) return out;
  rest.remove_prefix(request_line_end + 2);
  for (;;) {
    const auto end = rest.find("\r\n");
    if (end == std::string_view::npos || end == 0) break;  // the empty line ends the head
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // a flaw: no_colon
    out.emplace_back(line.substr(0, colon), trim_blanks(line.substr(colon + 1)));
  }
  return out;
}

}  // namespace kernelscan::detail
