#pragma once
// Plain-text tables for the command-line client: columns aligned by display width (UTF-8 code
// points, so "µs" and "±" count as one column each), two spaces between columns, no trailing
// blanks. Also the number formatting the tables share.
//
// Ownership: a value type. Threading: none (one command builds one table).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kernelscan::detail {

class text_table {
 public:
  enum class align { left, right };
  struct column {
    std::string header;
    align alignment = align::left;
  };

  explicit text_table(std::vector<column> columns);

  // A row of cells for the first cells.size() columns (the rest are left empty).
  void add_row(std::vector<std::string> cells);
  // A row whose first cells are aligned as usual and whose `note` then runs on to the end of
  // the line, not counted in any column's width: a failed point's error message.
  void add_row(std::vector<std::string> cells, std::string note);
  // A title line of its own, after a blank line, that starts a group of rows. A table that
  // starts with a section repeats the column headers under each title and indents its rows.
  void add_section(std::string title);

  std::string render(std::string_view indent = "") const;
  std::size_t rows() const { return m_rows.size(); }

 private:
  struct row {
    std::vector<std::string> cells;
    std::string note;
    bool section = false;
  };
  std::vector<column> m_columns;
  std::vector<row> m_rows;
};

// Display width: UTF-8 code points (no wide or combining characters are produced here).
std::size_t display_width(std::string_view s);

// `value` with `digits` significant digits, never in exponent form for magnitudes from 1e-3 to
// 1e15 (1234.5 with 4 digits is "1235", 0.012345 is "0.01235", 12345 stays "12345").
std::string format_significant(double value, int digits);

// Control characters (tabs, newlines) become spaces, and text longer than `max_width` code
// points is cut there with an ellipsis, so one cell stays on one line.
std::string one_line(std::string_view text, std::size_t max_width = std::string::npos);

// "1 point", "3 points": a count and its noun (a regular plural).
std::string counted(long long n, std::string_view noun);

}  // namespace kernelscan::detail
