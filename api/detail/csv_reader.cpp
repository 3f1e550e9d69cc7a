#include "api/detail/csv_reader.hpp"

namespace kernelscan::detail {

csv_reader::csv_reader(std::string_view text) : m_text(text) {
  if (m_text.substr(0, 3) == "\xEF\xBB\xBF") m_pos = 3;
}

bool csv_reader::line_break() {
  if (m_pos >= m_text.size()) return false;
  if (m_text[m_pos] == '\n') {
    ++m_pos;
  } else if (m_text[m_pos] == '\r') {
    ++m_pos;
    if (m_pos < m_text.size() && m_text[m_pos] == '\n') ++m_pos;
  } else {
    return false;
  }
  ++m_line;
  return true;
}

void csv_reader::skip_line() {
  while (m_pos < m_text.size() && m_text[m_pos] != '\n' && m_text[m_pos] != '\r')
    ++m_pos;
  line_break();
}

std::optional<csv_record> csv_reader::next() {
  if (at_end()) return std::nullopt;
  csv_record rec;
  rec.line = m_line;
  std::string field;
  bool first = true;
  while (true) {
    bool quoted = false;
    if (m_pos < m_text.size() && m_text[m_pos] == '"') {
      quoted = true;
      const std::size_t opened = m_line;
      ++m_pos;
      while (true) {
        if (m_pos >= m_text.size()) {
          throw csv_error(opened, "line " + std::to_string(opened) +
                                      ": a quoted field is not closed (a '\"' is missing)");
        }
        const char c = m_text[m_pos];
        if (c == '"') {
          if (m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '"') {
            field += '"';
            m_pos += 2;
            continue;
          }
          ++m_pos;
          break;
        }
        if (c == '\n' || (c == '\r' && !(m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '\n')))
          ++m_line;
        field += c;
        ++m_pos;
      }
      if (m_pos < m_text.size() && m_text[m_pos] != ',' && m_text[m_pos] != '\n' &&
          m_text[m_pos] != '\r') {
        throw csv_error(m_line, "line " + std::to_string(m_line) +
                                    ": text after a closing quote (a '\"' inside a quoted field "
                                    "must be doubled)");
      }
    } else {
      while (m_pos < m_text.size() && m_text[m_pos] != ',' && m_text[m_pos] != '\n' &&
             m_text[m_pos] != '\r') {
        field += m_text[m_pos++];
      }
    }
    if (first) rec.quoted = quoted;
    first = false;
    rec.fields.push_back(std::move(field));
    field.clear();
    if (m_pos < m_text.size() && m_text[m_pos] == ',') {
      ++m_pos;
      continue;
    }
    line_break();
    return rec;
  }
}

}  // namespace kernelscan::detail
