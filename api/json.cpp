#include "api/json.hpp"

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
    throw json_syntax_error("malformed JSON: " + msg);
  }
}

}  // namespace kernelscan
