#include "storage/detail/store_text.hpp"

namespace kernelscan::detail {

std::string encode_labels(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    out += std::to_string(k.size()) + ":" + k + std::to_string(v.size()) + ":" + v;
  }
  return out;
}

std::map<std::string, std::string> decode_labels(std::string_view text) {
  std::map<std::string, std::string> out;
  auto next = [&](std::string& into) {
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) return false;
    std::size_t n = 0;
    for (char c : text.substr(0, colon))
      n = n * 10 + std::size_t(c - '0');
    if (colon + 1 + n > text.size()) return false;
    into.assign(text.substr(colon + 1, n));
    text.remove_prefix(colon + 1 + n);
    return true;
  };
  std::string k, v;
  while (!text.empty() && next(k) && next(v))
    out.emplace(k, v);
  return out;
}

engine_kind parse_engine(std::string_view s) {
  for (auto e : {engine_kind::mock, engine_kind::hip, engine_kind::opencl, engine_kind::imported}) {
    if (s == to_string(e)) return e;
  }
  return engine_kind::any;
}

std::string join_flags(const std::vector<std::string>& flags) {
  std::string out;
  for (const auto& f : flags) {
    if (!out.empty()) out += ',';
    out += f;
  }
  return out;
}

std::vector<std::string> split_flags(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    if (comma != 0) out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::string with_cache_hit(std::string_view result_json, std::int64_t origin_job) {
  const auto close = result_json.rfind('}');
  if (close == std::string_view::npos) return std::string(result_json);  // not an object
  std::string out;
  out.reserve(result_json.size() + 40);
  out.append(result_json.substr(0, close));
  if (out.size() > 1) out += ',';
  out += "\"cache\":{\"hit\":true,\"job_id\":" + std::to_string(origin_job) + "}}";
  return out;
}

store_metric deleted_jobs_metric(std::uint64_t deleted) {
  return {"kernelscan_jobs_deleted_total",
          "Jobs this daemon deleted since it started (DELETE /api/v1/jobs/{id}, --retention-days).",
          "counter", double(deleted)};
}

}  // namespace kernelscan::detail
