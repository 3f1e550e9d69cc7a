#pragma once
// The bytes of one request's head (its request line and header lines, through the empty line
// that ends them) as the client sent them, checked as they arrive for what httplib would read
// otherwise than a proxy in front may have: httplib skips a header line that ends in a bare LF
// (so `Content-Length: 5\n` frames no body) and one without a colon or with whitespace before
// it (`Content-Length : 5`), keeps a folded line's continuation as nothing, and stops a line at
// a NUL; and it percent-decodes every header value (`Content-Length: 1%30` reads as 10). A head
// with any such flaw is refused (http_transport); the fields of one without are read here as
// sent.
//
// Ownership: a value type that holds a copy of the head's bytes. Threading: one thread at a time.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kernelscan::detail {

// Whether `c` may be in a token (RFC 9110 §5.6.2), as a field name's and a method's characters
// must be; and whether `s` is a token (not empty, all such characters).
bool is_tchar(char c);
bool is_token(std::string_view s);

class request_head {
 public:
  // What makes a head unreadable, the first one found.
  enum class flaw {
    none,
    bare_lf,         // a line ends in LF without CR before it
    bare_cr,         // a CR that no LF follows
    nul,             // a NUL byte
    folded_line,     // a header line begins with a space or tab (obsolete line folding)
    bad_field_name,  // a header line's name is empty or not a token (a space before the colon)
    no_colon,        // a header line has no colon
  };

  // Forgets the last head: the next byte taken begins a request line.
  void clear();
  // Takes the head's next bytes.
  void take(std::string_view bytes);

  flaw first_flaw() const { return m_flaw; }
  // The line of the head the first flaw is on, from 1 (the request line).
  std::size_t flaw_line() const { return m_flaw_line; }
  // The first flaw in words ("line 3 of the request's head ends in a bare LF ..."); empty when
  // there is none.
  std::string describe_flaw() const;
  // No line is under way: the last byte taken ended one, or none was taken.
  bool at_line_start() const { return m_column == 0; }
  // The head's bytes as taken.
  std::string_view text() const { return m_text; }

  // The header fields of a whole head without a flaw, as sent, in order: each name as written,
  // and its value without the spaces and tabs around it. The views point into text().
  std::vector<std::pair<std::string_view, std::string_view>> fields() const;
  // Whether httplib reads the fields of this head otherwise than fields() gives them: a header
  // line has a '%' (httplib percent-decodes values) or an empty value (httplib drops the
  // field). Where not, httplib's fields are those sent.
  bool httplib_reads_otherwise() const { return m_percent || m_empty_value; }

 private:
  void note(flaw f);

  std::string m_text;
  flaw m_flaw = flaw::none;
  std::size_t m_flaw_line = 0;
  std::size_t m_line = 1;      // the line being read, from 1
  std::size_t m_column = 0;    // bytes of it taken so far
  bool m_after_cr = false;     // the last byte taken was a CR
  bool m_in_name = true;       // a header line's colon has not come yet
  bool m_value_seen = false;   // a header line's value has begun
  bool m_percent = false;      // a header line has a '%'
  bool m_empty_value = false;  // a header line has an empty value
};

}  // namespace kernelscan::detail
