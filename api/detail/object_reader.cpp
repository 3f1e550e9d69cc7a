#include "api/detail/object_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace kernelscan::detail {

std::string join_path(std::string_view base, std::string_view key) {
  if (base.empty()) return std::string(key);
  return std::string(base) + "." + std::string(key);
}

std::string index_path(std::string_view base, std::size_t i) {
  return std::string(base) + "[" + std::to_string(i) + "]";
}

std::string_view json_type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

object_reader::object_reader(const json& value, std::string path, std::vector<field_error>& errors)
    : m_path(std::move(path)), m_errors(errors) {
  if (value.is_object()) {
    m_object = &value;
  } else {
    m_errors.push_back({m_path, "must be an object, not " + std::string(json_type_name(value))});
  }
}

bool object_reader::has(std::string_view key) const {
  if (!m_object) return false;
  auto it = m_object->find(key);
  return it != m_object->end() && !it->is_null();
}

void object_reader::error(std::string_view key, std::string message) {
  m_errors.push_back({field(key), std::move(message)});
}

const json* object_reader::get(std::string_view key) {
  m_known.emplace_back(key);
  if (!m_object) return nullptr;
  auto it = m_object->find(key);
  if (it == m_object->end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::string> object_reader::string(std::string_view key, std::size_t max_length,
                                                 bool required) {
  const json* v = get(key);
  if (!v) {
    if (required && m_object) error(key, "is required");
    return std::nullopt;
  }
  if (!v->is_string()) {
    error(key, "must be a string, not " + std::string(json_type_name(*v)));
    return std::nullopt;
  }
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_length) {
    error(key, "is " + std::to_string(s.size()) + " bytes long; the limit is " +
                   std::to_string(max_length));
    return std::nullopt;
  }
  // PostgreSQL's text cannot hold it, and no name, label or source needs it.
  if (s.find('\0') != std::string::npos) {
    error(key, "must not contain the NUL character (\\u0000)");
    return std::nullopt;
  }
  return s;
}

std::optional<std::int64_t> object_reader::integer(std::string_view key, std::int64_t lo,
                                                   std::int64_t hi, bool required) {
  const json* v = get(key);
  if (!v) {
    if (required && m_object) error(key, "is required");
    return std::nullopt;
  }
  std::int64_t out = 0;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > std::uint64_t(INT64_MAX)) {
      error(key, "is too large");
      return std::nullopt;
    }
    out = std::int64_t(u);
  } else if (v->is_number_integer()) {
    out = v->get<std::int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
             v->get<double>() == std::nearbyint(v->get<double>()) &&
             std::fabs(v->get<double>()) < 9.0e15) {
    out = std::int64_t(v->get<double>());  // 1e3 or 4.0 written for an integer
  } else {
    // A number is shown (1e+26 is an integer, but not one this field can hold).
    error(key,
          "must be an integer" + (v->is_number() ? " between " + std::to_string(lo) + " and " +
                                                       std::to_string(hi) + ", not " + v->dump()
                                                 : ", not " + std::string(json_type_name(*v))));
    return std::nullopt;
  }
  if (out < lo || out > hi) {
    error(key, "is " + std::to_string(out) + "; must be between " + std::to_string(lo) + " and " +
                   std::to_string(hi));
    return std::nullopt;
  }
  return out;
}

std::optional<double> object_reader::number(std::string_view key, double lo, double hi,
                                            bool required) {
  const json* v = get(key);
  if (!v) {
    if (required && m_object) error(key, "is required");
    return std::nullopt;
  }
  if (!v->is_number()) {
    error(key, "must be a number, not " + std::string(json_type_name(*v)));
    return std::nullopt;
  }
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    auto fmt = [](double x) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", x);
      return std::string(buf);
    };
    error(key, "is " + fmt(d) + "; must be between " + fmt(lo) + " and " + fmt(hi));
    return std::nullopt;
  }
  return d;
}

std::optional<bool> object_reader::boolean(std::string_view key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    error(key, "must be true or false, not " + std::string(json_type_name(*v)));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::map<std::string, std::string> read_labels(const json& v, const std::string& path,
                                               std::size_t max_labels,
                                               std::vector<field_error>& errors) {
  std::map<std::string, std::string> out;
  auto error = [&errors](std::string field, std::string message) {
    errors.push_back({std::move(field), std::move(message)});
  };
  if (!v.is_object()) {
    error(path, "must be an object of string values, not " + std::string(json_type_name(v)));
    return out;
  }
  if (v.size() > max_labels) {
    error(path, "has " + std::to_string(v.size()) + " labels; the limit is " +
                    std::to_string(max_labels));
    return out;
  }
  for (const auto& [key, value] : v.items()) {
    const std::string field = join_path(path, key);
    const bool key_ok =
        !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        });
    if (!key_ok) {
      error(field, "label keys are 1-64 characters of letters, digits, '_', '-' and '.'");
    } else if (!value.is_string()) {
      error(field, "must be a string, not " + std::string(json_type_name(value)));
    } else if (value.get_ref<const std::string&>().size() > 256) {
      error(field, "is longer than 256 bytes");
    } else if (value.get_ref<const std::string&>().find('\0') != std::string::npos) {
      error(field, "must not contain the NUL character (\\u0000)");
    } else {
      out[key] = value.get<std::string>();
    }
  }
  return out;
}

void object_reader::finish() {
  if (!m_object) return;
  for (const auto& [key, value] : m_object->items()) {
    if (std::find(m_known.begin(), m_known.end(), key) != m_known.end()) continue;
    std::vector<std::string> known = m_known;
    std::sort(known.begin(), known.end());
    known.erase(std::unique(known.begin(), known.end()), known.end());
    std::string allowed;
    for (const auto& k : known)
      allowed += (allowed.empty() ? "" : ", ") + k;
    m_errors.push_back({join_path(m_path, key), "unknown field (allowed here: " + allowed + ")"});
  }
}

}  // namespace kernelscan::detail
