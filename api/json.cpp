#include "api/json.hpp"

#include "api/detail/utf8.hpp"

namespace kernelscan {

json parse_json(std::string_view text) {
  bool too_deep = false;
  json::parser_callback_t limit_depth = [&too_deep](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= k_max_json_depth) {
      too_deep = true;
      throw json_syntax_error("JSON nesting is deeper than " + std::to_string(k_max_json_depth) +
                              " levels");
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), limit_depth);
  } catch (const json::exception& e) {
    // parse_error for bad syntax, out_of_range for a number no double holds ("1e999"; found by
    // fuzzing, it used to escape as a 500). The message is "[json.exception.KIND.N] ...";
    // keep the part after the tag.
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    // The message quotes what was last read, which may be half a UTF-8 character ("last read:
    // '\xC3'"); as it is, the error answer could not be written as JSON and became a 500.
    throw json_syntax_error("malformed JSON: " + detail::utf8_prefix(msg));
  }
}

}  // namespace kernelscan
