#pragma once
// Reads the fields of one JSON object for validation: every getter checks the type and range,
// records an error naming the field's path instead of throwing, and marks the key as known so
// that finish() can report fields nobody asked for (typos like "min_sample").

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/field_errors.hpp"
#include "api/json.hpp"

namespace kernelscan::detail {

std::string join_path(std::string_view base, std::string_view key);
std::string index_path(std::string_view base, std::size_t i);
std::string_view json_type_name(const json& j);

// Job labels (string -> string, at most `max_labels`, keys of 1-64 letters, digits, '_', '-',
// '.', values up to 256 bytes) at `path`; a problem is added to `errors` and its label skipped.
std::map<std::string, std::string> read_labels(const json& v, const std::string& path,
                                               std::size_t max_labels,
                                               std::vector<field_error>& errors);

class object_reader {
 public:
  // If `value` is not an object, records that and every getter returns nullopt.
  object_reader(const json& value, std::string path, std::vector<field_error>& errors);

  const std::string& path() const { return m_path; }
  std::string field(std::string_view key) const { return join_path(m_path, key); }
  bool ok() const { return m_object != nullptr; }
  bool has(std::string_view key) const;
  void error(std::string_view key, std::string message);

  // The raw value (marked known), nullptr if absent or null.
  const json* get(std::string_view key);
  std::optional<std::string> string(std::string_view key, std::size_t max_length,
                                    bool required = false);
  std::optional<std::int64_t> integer(std::string_view key, std::int64_t lo, std::int64_t hi,
                                      bool required = false);
  std::optional<double> number(std::string_view key, double lo, double hi, bool required = false);
  std::optional<bool> boolean(std::string_view key);
  template <class E>
  std::optional<E> choice(std::string_view key,
                          std::span<const std::pair<std::string_view, E>> options,
                          bool required = false);
  template <class E>
  std::optional<E> choice(std::string_view key,
                          std::initializer_list<std::pair<std::string_view, E>> options,
                          bool required = false) {
    return choice(key, std::span(options.begin(), options.size()), required);
  }

  // Reports keys that no getter read. Call once, after reading every field.
  void finish();

 private:
  const json* m_object = nullptr;
  std::string m_path;
  std::vector<field_error>& m_errors;
  std::vector<std::string> m_known;
};

template <class E>
std::optional<E> object_reader::choice(std::string_view key,
                                       std::span<const std::pair<std::string_view, E>> options,
                                       bool required) {
  auto s = string(key, 64, required);
  if (!s) return std::nullopt;
  for (const auto& [name, value] : options) {
    if (name == *s) return value;
  }
  std::string allowed;
  for (const auto& [name, value] : options) {
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  error(key, "\"" + *s + "\" is not one of " + allowed);
  return std::nullopt;
}

}  // namespace kernelscan::detail
