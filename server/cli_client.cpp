// The project's rule that cpp-httplib is included in exactly one .cpp is about the daemon (its
// handlers see plain request and response structs). The client is the other side of the wire
// and follows the same idea: this file is the only client code that sees httplib.
#include "server/cli_client.hpp"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

namespace kernelscan {
namespace {

constexpr std::chrono::seconds k_connect_timeout{5};
constexpr double k_read_timeout_s = 60;
// A long poll is held by the daemon for its wait; the read may take that much longer.
constexpr double k_long_poll_slack_s = 30;
// Jobs per request when listing (the API's maximum).
constexpr std::int64_t k_jobs_page = 1000;

api_failure failure_of(int status, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const json& e = j["error"];
    std::vector<field_error> details;
    json context = json::object();
    for (const auto& [key, value] : e.items()) {
      if (key == "details" && value.is_array()) {
        for (const auto& d : value) {
          if (d.is_object()) details.push_back({d.value("field", ""), d.value("message", "")});
        }
      } else if (key != "type" && key != "message") {
        context[key] = value;
      }
    }
    return api_failure(status, e.value("type", "http_error"), e.value("message", ""),
                       std::move(details), std::move(context));
  }
  std::string excerpt = body.substr(0, 200);
  std::replace_if(
      excerpt.begin(), excerpt.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return api_failure(status, "http_error",
                     "HTTP " + std::to_string(status) + (excerpt.empty() ? "" : ": " + excerpt));
}

std::string describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "could not connect";
    case httplib::Error::ConnectionTimeout:
      return "connecting timed out";
    case httplib::Error::Read:
      return "no answer (the connection closed or the read timed out)";
    case httplib::Error::Write:
      return "the request could not be sent";
    default:
      return httplib::to_string(e);
  }
}

connection_error unreachable(const std::string& server, httplib::Error e) {
  const std::string why = describe(e);
  return connection_error("cannot reach the kernelscan daemon at " + server + ": " + why +
                          " (is `kernelscan serve` running there? set the address with --server "
                          "or KERNELSCAN_SERVER)");
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Splits CSV text into records (CRLF-ended, RFC 4180 quoting: a CRLF inside quotes belongs to
// the field) and returns each record's text with its line end, plus the values of fields
// `field_index` and `second_index` of each.
struct csv_record {
  std::string text;
  std::string field;
  std::string second;
};
std::vector<csv_record> csv_records(const std::string& body, std::size_t field_index,
                                    std::size_t second_index) {
  std::vector<csv_record> out;
  std::size_t start = 0, field_no = 0, field_start = 0;
  bool quoted = false;
  std::string wanted, second;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && (c == ',' || c == '\n')) {
      const std::size_t end = c == '\n' && i > 0 && body[i - 1] == '\r' ? i - 1 : i;
      if (field_no == field_index) wanted = body.substr(field_start, end - field_start);
      if (field_no == second_index) second = body.substr(field_start, end - field_start);
      ++field_no;
      field_start = i + 1;
      if (c == '\n') {
        out.push_back({body.substr(start, i + 1 - start), wanted, second});
        start = field_start;
        field_no = 0;
        wanted.clear();
        second.clear();
      }
    }
  }
  if (start < body.size()) out.push_back({body.substr(start), wanted, second});
  return out;
}

// Which rows of a paged read are new. Rows are paged by offset in index order (the variants of
// a point in the job's order). While a job runs, a row stored into a gap before the offset
// shifts later rows by one, so a page can repeat the previous page's last rows: a row is kept
// only when its point is past the last one kept, or is that point with a variant not yet kept.
class row_dedup {
 public:
  bool keep(std::int64_t index, const std::string& variant) {
    if (index < m_last) return false;
    if (index > m_last) {
      m_last = index;
      m_variants.clear();
    }
    return m_variants.insert(variant).second;
  }

 private:
  std::int64_t m_last = -1;
  std::set<std::string> m_variants;  // of the point m_last
};

}  // namespace

std::string percent_encode(const std::string& text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

struct api_client::impl {
  explicit impl(const std::string& scheme_host_port) : http(scheme_host_port) {}
  httplib::Client http;
};

api_client::api_client(const std::string& server, std::string token)
    : m_server(server), m_token(std::move(token)) {
  std::string url = server;
  if (url.find("://") == std::string::npos) url = "http://" + url;
  const std::size_t colon = url.find("://");
  std::string scheme = url.substr(0, colon);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (scheme != "http" && scheme != "https") {
    throw std::invalid_argument("--server " + server + ": the URL must start with http:// or " +
                                "https://");
  }
  const std::string rest = url.substr(colon + 3);
  const std::size_t slash = rest.find('/');
  const std::string host_port = rest.substr(0, slash);
  if (slash != std::string::npos) m_prefix = rest.substr(slash);
  while (!m_prefix.empty() && m_prefix.back() == '/')
    m_prefix.pop_back();
  if (host_port.empty()) throw std::invalid_argument("--server " + server + ": no host");
  m_impl = std::make_unique<impl>(scheme + "://" + host_port);
  if (!m_impl->http.is_valid()) {
    throw std::invalid_argument("--server " + server + ": not a URL this client can use");
  }
  m_impl->http.set_connection_timeout(k_connect_timeout);
  m_impl->http.set_url_encode(false);  // paths and queries are encoded here
  m_impl->http.set_keep_alive(true);
  if (!m_token.empty()) m_impl->http.set_bearer_token_auth(m_token);
}

api_client::~api_client() = default;

void api_client::interrupt() {
  m_interrupted = true;
  m_impl->http.stop();  // shuts the socket of a request in flight: its read ends at once
}

void api_client::resume() {
  m_interrupted = false;
}
std::string api_client::get(const std::string& path_and_query, double read_timeout_s) {
  if (m_interrupted) throw connection_error("interrupted");
  auto& http = m_impl->http;
  http.set_read_timeout(std::chrono::milliseconds(std::int64_t(read_timeout_s * 1000)));
  const auto res = http.Get((m_prefix + path_and_query).c_str());
  if (!res) {
    throw unreachable(m_server, res.error());
  }
  if (res->status >= 300) throw failure_of(res->status, res->body);
  return res->body;
}

api_client::submitted api_client::submit(const std::string& spec_text,
                                         const std::string& idempotency_key) {
  auto& http = m_impl->http;
  http.set_read_timeout(std::chrono::seconds(std::int64_t(k_read_timeout_s)));
  httplib::Headers headers;
  if (!idempotency_key.empty()) headers.emplace("Idempotency-Key", idempotency_key);
  const auto res =
      http.Post((m_prefix + "/api/v1/jobs").c_str(), headers, spec_text, "application/json");
  if (!res) {
    throw unreachable(m_server, res.error());
  }
  if (res->status >= 300) throw failure_of(res->status, res->body);
  return {json::parse(res->body), res->get_header_value("Idempotent-Replayed") == "true"};
}

json api_client::job_action(std::int64_t id, const char* action) {
  return post("/api/v1/jobs/" + std::to_string(id) + "/" + action, "");
}

json api_client::post(const std::string& path_and_query, const std::string& body) {
  auto& http = m_impl->http;
  http.set_read_timeout(std::chrono::seconds(std::int64_t(k_read_timeout_s)));
  const auto res = http.Post((m_prefix + path_and_query).c_str(), body, "application/json");
  if (!res) {
    throw unreachable(m_server, res.error());
  }
  if (res->status >= 300) throw failure_of(res->status, res->body);
  return json::parse(res->body);
}

json api_client::devices() {
  return json::parse(get("/api/v1/devices", k_read_timeout_s));
}

namespace {
std::string device_path(std::int64_t index, const std::string& node, const char* tail) {
  return "/api/v1/devices/" + std::to_string(index) + tail +
         (node.empty() ? std::string() : "?node=" + percent_encode(node));
}
}  // namespace

json api_client::device(std::int64_t index, const std::string& node) {
  return json::parse(get(device_path(index, node, ""), k_read_timeout_s));
}

json api_client::measure_roofline(std::int64_t index, const std::string& node) {
  return post(device_path(index, node, "/roofline"), "{}");
}

json api_client::job(std::int64_t id, std::optional<double> wait_s) {
  const std::string path = "/api/v1/jobs/" + std::to_string(id) +
                           (wait_s ? "?wait=" + format_seconds(*wait_s) : std::string());
  const double timeout = wait_s ? *wait_s + k_long_poll_slack_s : k_read_timeout_s;
  // The daemon admits a bounded number of long polls; over it, it asks us to retry shortly.
  for (int attempt = 0;; ++attempt) {
    try {
      return json::parse(get(path, timeout));
    } catch (const api_failure& e) {
      if (e.status() != 429 || e.type() != "too_many_waiters" || attempt >= 60) throw;
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (m_interrupted) throw connection_error("interrupted");
    }
  }
}

json api_client::jobs(const job_filter& filter, std::int64_t limit) {
  std::string query;
  if (!filter.status.empty()) query += "&status=" + percent_encode(filter.status);
  if (!filter.task.empty()) query += "&task=" + percent_encode(filter.task);
  for (const auto& [key, value] : filter.labels)
    query += "&" + percent_encode("label." + key) + "=" + percent_encode(value);

  json all = json::array();
  json cursor = nullptr;
  while (std::int64_t(all.size()) < limit) {
    const std::int64_t page = std::min(k_jobs_page, limit - std::int64_t(all.size()));
    std::string path = "/api/v1/jobs?limit=" + std::to_string(page) + query;
    if (cursor.is_string()) path += "&cursor=" + percent_encode(cursor.get<std::string>());
    json body = json::parse(get(path, k_read_timeout_s));
    for (auto& j : body.at("jobs"))
      all.push_back(std::move(j));
    cursor = body.value("next_cursor", json());
    if (!cursor.is_string()) break;
  }
  return {{"jobs", std::move(all)}, {"next_cursor", cursor}};
}

json api_client::results_json(std::int64_t id, std::int64_t page_size) {
  const std::string base = "/api/v1/jobs/" + std::to_string(id) + "/results?format=json";
  json out;
  json rows = json::array();
  row_dedup dedup;
  for (std::int64_t offset = 0;;) {
    json page = json::parse(
        get(base + "&offset=" + std::to_string(offset) + "&limit=" + std::to_string(page_size),
            k_read_timeout_s));
    if (out.is_null()) {
      out = {{"job_id", page.at("job_id")},
             {"status", page.at("status")},
             {"progress", page.at("progress")}};
    }
    const json& got = page.at("results");
    for (const auto& r : got) {
      const std::int64_t index = r.value("index", std::int64_t(-1));
      const std::string variant = r.contains("variant") && r["variant"].is_string()
                                      ? r["variant"].get<std::string>()
                                      : std::string();
      if (dedup.keep(index, variant)) rows.push_back(r);
    }
    if (std::int64_t(got.size()) < page_size) break;
    offset += std::int64_t(got.size());
  }
  out["results"] = std::move(rows);
  return out;
}

std::string api_client::results_csv(std::int64_t id, std::int64_t page_size) {
  const std::string base = "/api/v1/jobs/" + std::to_string(id) + "/results?format=csv";
  std::string out;
  std::size_t index_field = 0;
  std::size_t variant_field = std::size_t(-1);  // a job with variants has the column
  row_dedup dedup;
  for (std::int64_t offset = 0;;) {
    const std::string body =
        get(base + "&offset=" + std::to_string(offset) + "&limit=" + std::to_string(page_size),
            k_read_timeout_s);
    // Every page starts with the header line; its `index` column follows the parameters.
    const std::size_t header_end = body.find('\n');
    const std::string header =
        body.substr(0, header_end == std::string::npos ? body.size() : header_end + 1);
    if (out.empty()) {
      out = header;
      const std::size_t at = ("," + header).find(",index,");
      if (at != std::string::npos)
        index_field = std::size_t(std::count(header.begin(), header.begin() + long(at), ','));
      const std::size_t v = ("," + header).find(",variant,");
      if (v != std::string::npos)
        variant_field = std::size_t(std::count(header.begin(), header.begin() + long(v), ','));
    }
    const auto records = csv_records(body.substr(header.size()), index_field, variant_field);
    for (const auto& r : records) {
      std::int64_t index = 0;
      const auto [end, ec] =
          std::from_chars(r.field.data(), r.field.data() + r.field.size(), index);
      if (ec == std::errc() && end == r.field.data() + r.field.size() &&
          !dedup.keep(index, r.second)) {
        continue;
      }
      out += r.text;
    }
    if (std::int64_t(records.size()) < page_size) break;
    offset += std::int64_t(records.size());
  }
  return out;
}

}  // namespace kernelscan
