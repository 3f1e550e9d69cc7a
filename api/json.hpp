#pragma once
// The JSON type of the wire: insertion-ordered, so objects keep the order the user wrote (sweep
// parameters enumerate in that order) and responses list fields in a readable order.

#include <nlohmann/json.hpp>
#include <optional>

namespace kernelscan {

using json = nlohmann::ordered_json;

// Deepest nesting accepted in a request body; deeper documents are rejected while parsing,
// before they can exhaust the stack.
inline constexpr int k_max_json_depth = 64;

// Parses untrusted text. Throws json_syntax_error (with the byte offset) on malformed input or
// nesting deeper than k_max_json_depth.
class json_syntax_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
json parse_json(std::string_view text);

// A JSON library error's message without its "[json.exception.parse_error.101] " tag.
std::string untagged_json_error(const std::string& message);

// The number at JSON pointer `pointer` in `j`; nullopt where `j` is no object, or holds no
// number there.
std::optional<double> number_at(const json& j, const char* pointer);

// A value as a text report shows it: a string as it is, null as "-", anything else as JSON.
std::string text_of(const json& v);

}  // namespace kernelscan
