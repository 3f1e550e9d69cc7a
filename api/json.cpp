#include "api/json.hpp"

#include <unordered_set>
#include <utility>
#include <vector>

#include "api/detail/utf8.hpp"

namespace kernelscan {

namespace {

// The most of a duplicate key or of a path an error message quotes.
constexpr std::size_t k_quoted_bytes = 80;

// Builds the document from the parser's events. nlohmann's own builder adds each key of an
// object through the ordered map's insertion, which searches the keys before it: an object of
// 100,000 keys took seconds of a thread. Here an object's keys go to a hash set as they come
// (a key that comes twice is an error: the last one would silently win) and its members are
// appended. Nesting deeper than k_max_json_depth is refused as it opens, before it can exhaust
// the stack. Errors name where they are: the path of the value being read.
class dom_builder {
 public:
  explicit dom_builder(json& root) : m_root(root) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool b) { return put(json(b)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return put(json(v)); }
  bool string(std::string& s) { return put(json(std::move(s))); }
  bool binary(json::binary_t& b) { return put(json::binary(std::move(b))); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    frame& f = m_open.back();
    if (!f.keys.insert(k).second) {
      throw json_syntax_error("malformed JSON: key \"" + detail::utf8_prefix(k, k_quoted_bytes) +
                              "\" appears twice in the object" + where(false));
    }
    f.key = std::move(k);
    f.has_key = true;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw malformed(e);
  }

  // The parser's error `e`, saying where it is. Its message quotes what was last read, which may
  // be half a UTF-8 character ("last read: '\xC3'"); as it is, the error answer could not be
  // written as JSON and became a 500.
  json_syntax_error malformed(const std::exception& e) const {
    return json_syntax_error(
        "malformed JSON: " + detail::utf8_prefix(untagged_json_error(e.what())) + where());
  }

  // " at kernel.args[2].name": where the value being read goes ("" at the top); with `member`
  // false, where the object or array being read is.
  std::string where(bool member = true) const {
    std::string path;
    const std::size_t frames = m_open.size() - (member || m_open.empty() ? 0 : 1);
    for (std::size_t i = 0; i < frames; ++i) {
      const frame& f = m_open[i];
      const bool top = i + 1 == m_open.size();
      if (f.node->is_array()) {
        // Below the top, the element being read is the last placed; at the top, the next.
        const std::size_t n = f.node->size();
        path += "[" + std::to_string(top ? n : n - 1) + "]";
      } else if (f.has_key) {
        path += (path.empty() ? "" : ".") + f.key;
      }
    }
    if (path.empty()) return "";
    return " at " + detail::utf8_prefix(path, k_quoted_bytes);
  }

 private:
  struct frame {
    json* node;
    std::string key;  // of the member being read (or last read), in an object
    bool has_key = false;
    std::unordered_set<std::string> keys;
  };

  // Places `v` where the parser is, and returns where it went.
  json* place(json v) {
    if (m_open.empty()) {
      m_root = std::move(v);
      return &m_root;
    }
    frame& f = m_open.back();
    if (f.node->is_array()) {
      auto& a = f.node->get_ref<json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();
    }
    // The object's vector: appended, not searched (its keys are in the frame's set).
    auto& members = static_cast<json::object_t::Container&>(f.node->get_ref<json::object_t&>());
    members.emplace_back(f.key, std::move(v));
    return &members.back().second;
  }
  bool put(json v) {
    (void)place(std::move(v));
    return true;
  }
  bool open(json container) {
    if (m_open.size() >= std::size_t(k_max_json_depth)) {
      throw json_syntax_error("JSON nesting is deeper than " + std::to_string(k_max_json_depth) +
                              " levels");
    }
    // A frame below the top points into its parent, which grows only once it is the top again.
    json* node = place(std::move(container));
    m_open.push_back({node, {}, false, {}});
    return true;
  }
  bool close() {
    m_open.pop_back();
    return true;
  }

  json& m_root;
  std::vector<frame> m_open;  // the arrays and objects being read, outermost first
};

}  // namespace

json parse_json(std::string_view text) {
  json root;
  dom_builder builder(root);
  try {
    json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const json_syntax_error&) {
    throw;
  } catch (const json::exception& e) {
    // out_of_range for a number no double holds ("1e999"; found by fuzzing, it used to escape
    // as a 500), thrown by the parser itself rather than reported.
    throw builder.malformed(e);
  }
  return root;
}

std::string untagged_json_error(const std::string& message) {
  const auto tag_end = message.find("] ");
  return message.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos
             ? message.substr(tag_end + 2)
             : message;
}

std::optional<double> number_at(const json& j, const char* pointer) {
  const json::json_pointer p{pointer};
  if (!j.is_object() || !j.contains(p)) return std::nullopt;
  const json& v = j[p];
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

}  // namespace kernelscan
