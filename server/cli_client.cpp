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
#include <functional>
#include <optional>
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

// The API's error answer {"error": {"type", "message", "details"}}; nullopt for a body not in
// that shape (another web server's page, a proxy's).
std::optional<api_failure> failure_of(int status, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object() ||
      !j["error"].contains("type") || !j["error"]["type"].is_string()) {
    return std::nullopt;
  }
  const json& e = j["error"];
  std::vector<field_error> details;
  json context = json::object();
  for (const auto& [key, value] : e.items()) {
    if (key == "details" && value.is_array()) {
      for (const auto& d : value) {
        if (d.is_object()) {
          details.push_back(
              {d.value("field", json()).is_string() ? d["field"].get<std::string>() : std::string(),
               d.value("message", json()).is_string() ? d["message"].get<std::string>()
                                                      : std::string()});
        }
      }
    } else if (key != "type" && key != "message") {
      context[key] = value;
    }
  }
  const std::string message = e.contains("message") && e["message"].is_string()
                                  ? e["message"].get<std::string>()
                                  : std::string();
  return api_failure(status, e["type"].get<std::string>(), message, std::move(details),
                     std::move(context));
}

// The start of `body` on one line, for a message.
std::string excerpt_of(const std::string& body) {
  std::string excerpt = body.substr(0, 120);
  std::replace_if(
      excerpt.begin(), excerpt.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; },
      ' ');
  const bool cut = body.size() > excerpt.size();
  while (!excerpt.empty() && excerpt.back() == ' ')
    excerpt.pop_back();
  return excerpt + (cut ? "..." : "");
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

foreign_answer api_client::foreign(const std::string& request, int status,
                                   const std::string& content_type, const std::string& body,
                                   const std::string& lacking) const {
  std::string what = request + " answered";
  if (status > 0) what += " HTTP " + std::to_string(status);
  if (!content_type.empty()) what += ", " + content_type;
  if (!lacking.empty()) what += " " + lacking;
  if (!body.empty()) what += ": " + excerpt_of(body);
  return foreign_answer("the server at " + m_server + " did not answer like a kernelscan daemon (" +
                        what + ")");
}

std::string api_client::body_of(const std::string& request, const httplib::Result& res) const {
  if (!res) throw unreachable(m_server, res.error());
  if (res->status >= 200 && res->status < 300) return res->body;
  if (auto failure = failure_of(res->status, res->body)) throw std::move(*failure);
  throw foreign(request, res->status, res->get_header_value("Content-Type"), res->body, "");
}

json api_client::json_of(const std::string& request, const std::string& body,
                         const std::function<std::string(const json&)>& lacks) const {
  json j = json::parse(body, nullptr, false);
  const std::string lacking = j.is_discarded() ? "with something not JSON"
                              : !j.is_object() ? "with JSON not an object"
                                               : lacks(j);
  if (!lacking.empty()) throw foreign(request, 0, "", body, lacking);
  return j;
}

namespace {

// What a Job answer lacks of what the client reads from it; "" when nothing.
std::string job_lacks(const json& j) {
  if (!j.contains("id") || !j["id"].is_number_integer()) return "without a job id";
  if (!j.contains("status") || !j["status"].is_string()) return "without a job status";
  return "";
}

// "" where `j[key]` is an array of objects, else what is wrong.
std::string lacks_list(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_array()) return std::string("without a \"") + key + "\" list";
  for (const auto& e : j[key])
    if (!e.is_object()) return std::string("with \"") + key + "\" holding other than objects";
  return "";
}

std::string device_lacks(const json& j) {
  return j.contains("index") && j["index"].is_number_integer() ? "" : "without a device index";
}

}  // namespace

std::string api_client::get(const std::string& path_and_query, double read_timeout_s) {
  if (m_interrupted) throw connection_error("interrupted");
  auto& http = m_impl->http;
  http.set_read_timeout(std::chrono::milliseconds(std::int64_t(read_timeout_s * 1000)));
  return body_of("GET " + path_and_query, http.Get((m_prefix + path_and_query).c_str()));
}

api_client::submitted api_client::submit(const std::string& spec_text,
                                         const std::string& idempotency_key,
                                         const std::string& task) {
  auto& http = m_impl->http;
  http.set_read_timeout(std::chrono::seconds(std::int64_t(k_read_timeout_s)));
  httplib::Headers headers;
  if (!idempotency_key.empty()) headers.emplace("Idempotency-Key", idempotency_key);
  const std::string path =
      task.empty() ? "/api/v1/jobs" : "/api/v1/tasks/" + percent_encode(task) + "/submissions";
  const auto res = http.Post((m_prefix + path).c_str(), headers, spec_text, "application/json");
  const std::string request = "POST " + path;
  return {json_of(request, body_of(request, res), job_lacks),
          res->get_header_value("Idempotent-Replayed") == "true"};
}

json api_client::tasks() {
  return json_of("GET /api/v1/tasks", get("/api/v1/tasks", k_read_timeout_s),
                 [](const json& j) { return lacks_list(j, "tasks"); });
}

json api_client::task(const std::string& name) {
  const std::string path = "/api/v1/tasks/" + percent_encode(name);
  return json_of("GET " + path, get(path, k_read_timeout_s), [](const json& j) -> std::string {
    return j.contains("name") && j["name"].is_string() && j.contains("kernel") &&
                   j["kernel"].is_object()
               ? ""
               : "a task's name and kernel";
  });
}

json api_client::job_action(std::int64_t id, const char* action) {
  return post("/api/v1/jobs/" + std::to_string(id) + "/" + action, "", job_lacks);
}

void api_client::delete_job(std::int64_t id) {
  auto& http = m_impl->http;
  http.set_read_timeout(std::chrono::seconds(std::int64_t(k_read_timeout_s)));
  const std::string path = "/api/v1/jobs/" + std::to_string(id);
  const std::string request = "DELETE " + path;
  const auto res = http.Delete((m_prefix + path).c_str());
  const std::string body = body_of(request, res);
  // A web server that is not the daemon may answer 200 to anything; that deletes no job.
  if (res->status != 204) {
    throw foreign(request, res->status, res->get_header_value("Content-Type"), body,
                  "instead of 204 No Content");
  }
}

json api_client::post(const std::string& path_and_query, const std::string& body,
                      const std::function<std::string(const json&)>& lacks) {
  auto& http = m_impl->http;
  http.set_read_timeout(std::chrono::seconds(std::int64_t(k_read_timeout_s)));
  const std::string request = "POST " + path_and_query;
  return json_of(
      request,
      body_of(request, http.Post((m_prefix + path_and_query).c_str(), body, "application/json")),
      lacks);
}

json api_client::devices() {
  return json_of("GET /api/v1/devices", get("/api/v1/devices", k_read_timeout_s),
                 [](const json& j) { return lacks_list(j, "devices"); });
}

namespace {
std::string device_path(std::int64_t index, const std::string& node, const char* tail) {
  return "/api/v1/devices/" + std::to_string(index) + tail +
         (node.empty() ? std::string() : "?node=" + percent_encode(node));
}
}  // namespace

json api_client::device(std::int64_t index, const std::string& node) {
  const std::string path = device_path(index, node, "");
  return json_of("GET " + path, get(path, k_read_timeout_s), device_lacks);
}

json api_client::measure_roofline(std::int64_t index, const std::string& node) {
  return post(device_path(index, node, "/roofline"), "{}", device_lacks);
}

json api_client::job(std::int64_t id, std::optional<double> wait_s) {
  const std::string path = "/api/v1/jobs/" + std::to_string(id) +
                           (wait_s ? "?wait=" + format_seconds(*wait_s) : std::string());
  const double timeout = wait_s ? *wait_s + k_long_poll_slack_s : k_read_timeout_s;
  // The daemon admits a bounded number of long polls; over it, it asks us to retry shortly.
  for (int attempt = 0;; ++attempt) {
    try {
      return json_of("GET " + path, get(path, timeout), job_lacks);
    } catch (const api_failure& e) {
      if (e.status() != 429 || e.type() != "too_many_waiters" || attempt >= 60) throw;
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (m_interrupted) throw connection_error("interrupted");
    }
  }
}

json api_client::jobs_page(const job_filter& filter, std::int64_t limit, const json& cursor) {
  std::string path = "/api/v1/jobs?limit=" + std::to_string(limit);
  if (!filter.status.empty()) path += "&status=" + percent_encode(filter.status);
  if (!filter.task.empty()) path += "&task=" + percent_encode(filter.task);
  for (const auto& [key, value] : filter.labels)
    path += "&" + percent_encode("label." + key) + "=" + percent_encode(value);
  if (cursor.is_string()) path += "&cursor=" + percent_encode(cursor.get<std::string>());
  return json_of("GET " + path, get(path, k_read_timeout_s),
                 [](const json& j) { return lacks_list(j, "jobs"); });
}

json api_client::jobs(const job_filter& filter, std::int64_t limit) {
  json all = json::array();
  json cursor = nullptr;
  while (std::int64_t(all.size()) < limit) {
    json body = jobs_page(filter, std::min(k_jobs_page, limit - std::int64_t(all.size())), cursor);
    for (auto& j : body["jobs"])
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
    const std::string path =
        base + "&offset=" + std::to_string(offset) + "&limit=" + std::to_string(page_size);
    json page = json_of("GET " + path, get(path, k_read_timeout_s), [](const json& j) {
      if (!j.contains("job_id") || !j.contains("status") || !j.contains("progress"))
        return std::string("without job_id, status and progress");
      return lacks_list(j, "results");
    });
    if (out.is_null()) {
      out = {
          {"job_id", page["job_id"]}, {"status", page["status"]}, {"progress", page["progress"]}};
    }
    const json& got = page["results"];
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
    const std::string path =
        base + "&offset=" + std::to_string(offset) + "&limit=" + std::to_string(page_size);
    const std::string body = get(path, k_read_timeout_s);
    // Every page starts with the header line; its `index` column follows the parameters.
    const std::size_t header_end = body.find('\n');
    const std::string header =
        body.substr(0, header_end == std::string::npos ? body.size() : header_end + 1);
    std::string columns = "," + header.substr(0, header.find_first_of("\r\n")) + ",";
    if (columns.find(",index,") == std::string::npos ||
        columns.find(",status,") == std::string::npos) {
      throw foreign("GET " + path, 0, "", body, "with something not the results' CSV");
    }
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
