#include "api/detail/json_writer.hpp"

#include <charconv>
#include <cmath>

namespace kernelscan::detail {

void json_writer::separate() {
  if (!m_first) m_out += ',';
  m_first = false;
}

json_writer& json_writer::begin_object() {
  separate();
  m_out += '{';
  m_first = true;
  return *this;
}

json_writer& json_writer::end_object() {
  m_out += '}';
  m_first = false;
  return *this;
}

json_writer& json_writer::key(std::string_view k) {
  value(k);
  m_out += ':';
  m_first = true;  // the value follows without a comma
  return *this;
}

json_writer& json_writer::value(std::string_view s) {
  separate();
  static constexpr char k_hex[] = "0123456789abcdef";
  m_out += '"';
  std::size_t run = 0;  // start of the characters not yet copied: copy runs, escape the rest
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    m_out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        m_out += "\\\"";
        break;
      case '\\':
        m_out += "\\\\";
        break;
      case '\n':
        m_out += "\\n";
        break;
      case '\r':
        m_out += "\\r";
        break;
      case '\t':
        m_out += "\\t";
        break;
      case '\b':
        m_out += "\\b";
        break;
      case '\f':
        m_out += "\\f";
        break;
      default:
        m_out += "\\u00";
        m_out += k_hex[c >> 4];
        m_out += k_hex[c & 0xf];
    }
  }
  m_out.append(s.data() + run, s.size() - run);
  m_out += '"';
  return *this;
}

json_writer& json_writer::value(std::int64_t v) {
  separate();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  m_out.append(buf, r.ptr);
  return *this;
}

json_writer& json_writer::value(std::uint64_t v) {
  separate();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  m_out.append(buf, r.ptr);
  return *this;
}

json_writer& json_writer::value(double v) {
  if (!std::isfinite(v)) return null();
  separate();
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  m_out.append(buf, r.ptr);
  // Keep it a JSON float, as nlohmann writes it ("2.0", not "2").
  if (std::string_view(buf, std::size_t(r.ptr - buf)).find_first_of(".eE") ==
      std::string_view::npos) {
    m_out += ".0";
  }
  return *this;
}

json_writer& json_writer::value(bool v) {
  separate();
  m_out += v ? "true" : "false";
  return *this;
}

json_writer& json_writer::null() {
  separate();
  m_out += "null";
  return *this;
}

json_writer& json_writer::raw(std::string_view json_text) {
  separate();
  m_out += json_text;
  return *this;
}

}  // namespace kernelscan::detail
