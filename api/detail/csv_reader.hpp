#pragma once
// Reads CSV text record by record (RFC 4180): fields separated by commas, a field quoted with
// '"' may hold commas, quotes (doubled) and line breaks; records end with LF or CRLF (a lone
// CR too). Untrusted input: every problem is a csv_error naming the line, never a crash.
//
// Ownership: views the text it is given, which must outlive the reader. Threading: none.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kernelscan::detail {

class csv_error : public std::runtime_error {
 public:
  csv_error(std::size_t line, const std::string& what) : std::runtime_error(what), m_line(line) {}
  std::size_t line() const { return m_line; }  // 1-based

 private:
  std::size_t m_line;
};

struct csv_record {
  std::size_t line = 0;  // where the record starts, 1-based
  std::vector<std::string> fields;
  // A line with nothing on it (one empty, unquoted field).
  bool blank() const { return fields.size() == 1 && fields[0].empty() && !quoted; }
  bool quoted = false;  // the first field was quoted
};

class csv_reader {
 public:
  // A UTF-8 byte order mark at the start is skipped.
  explicit csv_reader(std::string_view text);

  // The next record, or nullopt at the end of the text. Throws csv_error (an unterminated
  // quoted field, text after a closing quote).
  std::optional<csv_record> next();
  // Skips to the start of the next physical line without reading it as CSV (text before a
  // table, such as a tool's progress messages).
  void skip_line();
  bool at_end() const { return m_pos >= m_text.size(); }
  // Where the reader is: the position and line next() would start from.
  struct mark {
    std::size_t pos, line;
  };
  mark position() const { return {m_pos, m_line}; }
  void seek(mark m) {
    m_pos = m.pos;
    m_line = m.line;
  }

 private:
  // Consumes one line break at m_pos, if there is one; true if it did.
  bool line_break();

  std::string_view m_text;
  std::size_t m_pos = 0;
  std::size_t m_line = 1;
};

}  // namespace kernelscan::detail
