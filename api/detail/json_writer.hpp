#pragma once
// Writes JSON text straight into a string, for hot responses where building a DOM first costs
// more than the request's database work. Keys and values are written in the order given; the
// caller keeps the nesting balanced. Not for untrusted text that is not UTF-8 (strings are
// escaped, not validated: they come from documents already parsed as JSON).

#include <cstdint>
#include <string>
#include <string_view>

namespace kernelscan::detail {

class json_writer {
 public:
  explicit json_writer(std::string& out) : m_out(out) {}

  json_writer& begin_object();
  json_writer& end_object();
  json_writer& key(std::string_view k);
  json_writer& value(std::string_view s);
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(std::int64_t v);
  json_writer& value(std::uint64_t v);
  json_writer& value(int v) { return value(std::int64_t(v)); }
  json_writer& value(double v);  // shortest text that reads back the same; null if not finite
  json_writer& value(bool v);
  json_writer& null();
  // Text that is already JSON (a stored object), written as it is.
  json_writer& raw(std::string_view json_text);

 private:
  void separate();

  std::string& m_out;
  bool m_first = true;  // no comma before the next member or element
};

}  // namespace kernelscan::detail
