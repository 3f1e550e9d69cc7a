#include "server/detail/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kernelscan::detail {

text_table::text_table(std::vector<column> columns) : m_columns(std::move(columns)) {}

void text_table::add_row(std::vector<std::string> cells) {
  add_row(std::move(cells), "");
}

void text_table::add_row(std::vector<std::string> cells, std::string note) {
  cells.resize(std::min(cells.size(), m_columns.size()));
  m_rows.push_back({std::move(cells), std::move(note), false});
}

void text_table::add_section(std::string title) {
  m_rows.push_back({{}, std::move(title), true});
}

std::string text_table::render(std::string_view indent) const {
  std::vector<std::size_t> widths;
  for (const auto& c : m_columns)
    widths.push_back(display_width(c.header));
  for (const auto& r : m_rows) {
    for (std::size_t i = 0; i < r.cells.size(); ++i)
      widths[i] = std::max(widths[i], display_width(r.cells[i]));
  }

  // With sections, the column headers go under each section title, where the eye looks for
  // them, and the rows are indented under the title; without, the headers come once at the top.
  const bool sectioned = !m_rows.empty() && m_rows.front().section;
  const std::string row_indent = std::string(indent) + (sectioned ? "  " : "");
  std::string out;
  auto line = [&](const std::vector<std::string>& cells, const std::string& note) {
    std::string text = row_indent;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) text += "  ";
      const std::size_t pad = widths[i] - display_width(cells[i]);
      if (m_columns[i].alignment == align::right) text.append(pad, ' ');
      text += cells[i];
      if (m_columns[i].alignment == align::left) text.append(pad, ' ');
    }
    if (!note.empty()) text += (cells.empty() ? "" : "  ") + note;
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    out += text + "\n";
  };

  std::vector<std::string> headers;
  for (const auto& c : m_columns)
    headers.push_back(c.header);
  if (!sectioned) line(headers, "");
  for (std::size_t i = 0; i < m_rows.size(); ++i) {
    const auto& r = m_rows[i];
    if (r.section) {
      if (i) out += "\n";
      out += std::string(indent) + r.note + "\n";
      line(headers, "");
    } else {
      line(r.cells, r.note);
    }
  }
  return out;
}

std::size_t display_width(std::string_view s) {
  return std::size_t(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
  }));
}

std::string format_significant(double value, int digits) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  if (magnitude < 1e-3 || magnitude >= 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*e", std::max(0, digits - 1), value);
    return buf;
  }
  // Decimals from the magnitude after rounding, so 9.9996 with 4 digits is "10.00", not "10.000".
  int exponent = int(std::floor(std::log10(magnitude)));
  const double rounded_up =
      std::pow(10.0, exponent + 1) - 0.5 * std::pow(10.0, exponent + 1 - digits);
  if (magnitude >= rounded_up) ++exponent;
  const int decimals = std::max(0, digits - 1 - exponent);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string one_line(std::string_view text, std::size_t max_width) {
  std::string out;
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool starts_code_point = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_code_point) {
      if (width == max_width) {
        // Cut one code point earlier to make room for the ellipsis.
        while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
          out.pop_back();
        if (!out.empty()) out.pop_back();
        return out + "…";
      }
      ++width;
    }
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) ? ' ' : c;
  }
  return out;
}

std::string counted(long long n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace kernelscan::detail
