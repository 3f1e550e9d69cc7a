#include "server/http_api.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "api/api_error.hpp"
#include "api/device_codec.hpp"
#include "api/import_codec.hpp"
#include "api/job_codec.hpp"
#include "api/job_spec_codec.hpp"
#include "api/result_codec.hpp"
#include "api/result_fields.hpp"
#include "engine/language_support.hpp"
#include "server/access_control.hpp"
#include "server/detail/comma_list.hpp"
#include "server/fleet_devices.hpp"
#include "server/fleet_relay.hpp"
#include "server/http_metrics.hpp"
#include "server/web_assets.hpp"

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t k_results_page = 512;
constexpr double k_max_wait_s = 600;
// An idle event stream sends a comment this often, which also finds clients that went away.
constexpr auto k_event_heartbeat = std::chrono::seconds(15);
// Events are sent in batches at most this often per stream (bursts of points coalesce).
constexpr auto k_event_linger = std::chrono::milliseconds(100);

// If-None-Match: "*", or a list of entity tags, weak (W/"...") or strong; weak comparison.
bool etag_matches(const std::string& header, std::string_view etag) {
  if (header.empty()) return false;
  for (auto tag : detail::split_commas(header)) {
    tag = detail::trim_spaces(tag);
    if (tag.rfind("W/", 0) == 0) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
  }
  return false;
}

// Accept-Encoding names gzip (without q=0).
bool accepts_gzip(const std::string& header) {
  for (auto item : detail::split_commas(header)) {
    item = detail::trim_spaces(item);
    const auto semi = item.find(';');
    if (detail::trim_spaces(item.substr(0, semi)) != "gzip") continue;
    if (semi == std::string_view::npos) return true;
    auto q = detail::trim_spaces(item.substr(semi + 1));
    return !(q.rfind("q=0", 0) == 0 && q.find_first_not_of("0.", 2) == std::string_view::npos);
  }
  return false;
}

// Plain request/response structs: handlers know nothing of httplib.
struct request {
  std::string method;
  std::string path;
  std::vector<std::string> captures;  // path parameters, in order
  std::multimap<std::string, std::string> query;
  std::function<std::string(const std::string&)> header;
  std::string body;
};

struct response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set instead of body for streamed responses: called until it returns false.
  std::function<bool(std::string& chunk)> stream;
};

response text_response(int status, std::string body) {
  response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

response json_response(int status, const json& j) {
  response r;
  r.status = status;
  r.body = j.dump();
  return r;
}

std::optional<std::string> query_value(const request& req, const std::string& key) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return std::nullopt;
  return it->second;
}

api_error bad_parameter(const std::string& name, const std::string& why) {
  return api_error(400, "invalid_parameter", name + ": " + why, {{name, why}});
}

std::int64_t int_param(const request& req, const std::string& name, std::int64_t lo,
                       std::int64_t hi, std::int64_t fallback) {
  auto v = query_value(req, name);
  if (!v) return fallback;
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size()) {
    throw bad_parameter(name, "\"" + *v + "\" is not an integer");
  }
  if (out < lo || out > hi) {
    throw bad_parameter(name,
                        "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  return out;
}

std::int64_t job_id_of(const request& req) {
  std::int64_t id = 0;
  const auto& s = req.captures.at(0);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || end != s.data() + s.size()) {
    throw api_error(404, "not_found", "no job " + s);
  }
  return id;
}

std::string hash_hex(std::string_view data) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: tells a retry from a different body
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// A device field as text: "" where it is null (a model or PCI address not known) or absent.
std::string text_of(const json& d, const char* key) {
  const auto it = d.find(key);
  return it != d.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json device_json(const device_view& v) {
  json j = to_json(v);
  j["last_heartbeat_at"] = format_time_ms(unix_time_ms());
  return j;
}

}  // namespace

struct http_api::impl {
  using handler = response (impl::*)(const request&);
  // Paths are OpenAPI templates: {name} matches one non-empty segment and is captured.
  struct route {
    std::string method;
    std::string path;
    handler fn;
  };

  static const std::vector<route>& table() {
    static const std::vector<route> k_routes{
        {"GET", "/api/v1/jobs/{id}", &impl::get_job},  // the hot one first
        {"GET", "/api/v1/jobs", &impl::list_jobs},
        {"POST", "/api/v1/jobs", &impl::submit_job},
        {"POST", "/api/v1/imports", &impl::import_results},
        {"GET", "/api/v1/jobs/{id}/results", &impl::results},
        {"POST", "/api/v1/jobs/{id}/cancel", &impl::cancel_job},
        {"GET", "/api/v1/events", &impl::events_stream},
        {"GET", "/api/v1/devices", &impl::list_devices},
        {"GET", "/api/v1/devices/{index}", &impl::get_device},
        {"POST", "/api/v1/devices/{index}/roofline", &impl::measure_roofline},
        {"GET", "/healthz", &impl::healthz},
        {"GET", "/metrics", &impl::metrics_text},
        {"GET", "/readyz", &impl::readyz},
        {"GET", "/api/v1/openapi.yaml", &impl::asset},
        {"GET", "/", &impl::asset},
        {"GET", "/assets/{file}", &impl::asset},
    };
    return k_routes;
  }

  // Segment by segment, without regular expressions (httplib would try one std::regex per
  // route, which cost more than the whole GET job handler).
  static bool match(std::string_view templ, std::string_view path,
                    std::vector<std::string>& captures) {
    captures.clear();
    while (!templ.empty() || !path.empty()) {
      if (templ.empty() || path.empty() || templ[0] != '/' || path[0] != '/') return false;
      templ.remove_prefix(1);
      path.remove_prefix(1);
      const auto t_end = std::min(templ.find('/'), templ.size());
      const auto p_end = std::min(path.find('/'), path.size());
      const auto t_seg = templ.substr(0, t_end), p_seg = path.substr(0, p_end);
      if (!t_seg.empty() && t_seg.front() == '{') {
        if (p_seg.empty()) return false;
        captures.emplace_back(p_seg);
      } else if (t_seg != p_seg) {
        return false;
      }
      templ.remove_prefix(t_end);
      path.remove_prefix(p_end);
    }
    return true;
  }

  impl(job_store& s, scheduler& sc, job_waiters& w, event_hub& e, const serve_config& c)
      : store(s),
        sched(sc),
        waiters(w),
        events(e),
        config(c),
        access({c.token_file, c.auth_reads, c.rate_limit, c.cors_origin}) {}

  job_store& store;
  scheduler& sched;
  job_waiters& waiters;
  event_hub& events;
  serve_config config;
  httplib::Server server;
  std::atomic<int> long_polls{0};
  std::atomic<int> event_streams{0};
  std::mt19937_64 seeds{std::random_device{}()};
  std::mutex seeds_mutex;
  access_control access;
  http_metrics requests;

  // ---- routes ----

  response healthz(const request&) { return json_response(200, {{"status", "ok"}}); }

  response readyz(const request&) {
    json devices = json::array();
    std::vector<field_error> unready;  // one per device without a running worker
    for (const auto& d : sched.devices()) {
      devices.push_back({{"index", d.info.index}, {"state", to_string(d.state)}});
      if (d.state != device_state::idle && d.state != device_state::busy) {
        unready.push_back({"devices[" + std::to_string(d.info.index) + "]",
                           "is " + std::string(to_string(d.state)) + ": no running worker" +
                               (d.last_error.empty() ? "" : " (" + d.last_error + ")")});
      }
    }
    // Readiness includes being able to read the store (a storage error answers 503 itself).
    store.ping();
    if (!sched.ready()) {
      return json_response(503, error_body("not_ready", "not every device has a running worker",
                                           unready, json{{"devices", devices}}));
    }
    return json_response(200, {{"status", "ready"}, {"storage", "ok"}, {"devices", devices}});
  }

  response metrics_text(const request&) {
    std::string out;
    auto gauge = [&out](const char* name, const char* help, const std::string& type) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    };
    gauge("kernelscan_build_info", "The running version.", "gauge");
    out += std::string("kernelscan_build_info{version=\"") + KERNELSCAN_VERSION + "\"} 1\n";
    // The figures the store holds are left out while it cannot be read, and the page still
    // answers: it is how an operator sees an outage (kernelscan_storage_up 0, and the points
    // waiting for the store in kernelscan_points_unstored).
    std::optional<std::map<job_status, std::int64_t>> counts;
    try {
      counts = store.count_by_status();
    } catch (const storage_error& e) {
      if (!e.unavailable()) throw;
    }
    gauge("kernelscan_storage_up",
          "1 while the store can be read, 0 while it cannot (the job figures are left out then).",
          "gauge");
    out += std::string("kernelscan_storage_up ") + (counts ? "1" : "0") + "\n";
    if (counts) {
      auto count = [&](job_status st) {
        auto it = counts->find(st);
        return it == counts->end() ? std::int64_t(0) : it->second;
      };
      gauge("kernelscan_queue_depth", "Jobs waiting for a device.", "gauge");
      out += "kernelscan_queue_depth " + std::to_string(count(job_status::queued)) + "\n";
      gauge("kernelscan_jobs", "Jobs in the store, by state.", "gauge");
      for (auto st : {job_status::queued, job_status::running, job_status::succeeded,
                      job_status::failed, job_status::cancelled}) {
        out += "kernelscan_jobs{state=\"" + std::string(to_string(st)) + "\"} " +
               std::to_string(count(st)) + "\n";
      }
    }
    gauge("kernelscan_points_measured_total", "Sweep points measured since the daemon started.",
          "counter");
    out += "kernelscan_points_measured_total " + std::to_string(sched.points_measured()) + "\n";
    gauge("kernelscan_points_unstored",
          "Measured points waiting for storage (grows while it "
          "fails).",
          "gauge");
    out += "kernelscan_points_unstored " + std::to_string(sched.points_unstored()) + "\n";
    gauge("kernelscan_worker_restarts_total",
          "Worker processes restarted since the daemon "
          "started.",
          "counter");
    out += "kernelscan_worker_restarts_total " + std::to_string(sched.worker_restarts()) + "\n";
    gauge("kernelscan_devices", "Devices, by state.", "gauge");
    std::map<std::string, int> states;
    for (auto st : {device_state::starting, device_state::idle, device_state::busy,
                    device_state::restarting, device_state::failed}) {
      states[std::string(to_string(st))] = 0;
    }
    for (const auto& d : sched.devices())
      ++states[std::string(to_string(d.state))];
    for (const auto& [st, n] : states) {
      out += "kernelscan_devices{state=\"" + st + "\"} " + std::to_string(n) + "\n";
    }
    for (const auto& m : store.metrics()) {
      gauge(m.name.c_str(), m.help.c_str(), m.type);
      out += m.name + " " + std::to_string(std::int64_t(m.value)) + "\n";
    }
    gauge("kernelscan_long_polls", "Requests waiting on a job (?wait=).", "gauge");
    out += "kernelscan_long_polls " + std::to_string(long_polls.load()) + "\n";
    out += requests.exposition();
    response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = std::move(out);
    return r;
  }

  response list_devices(const request&) {
    json out = json::array();
    for (auto& d : fleet_devices(store, sched, config.lease_timeout_s, !config.database.empty()))
      out.push_back(std::move(d));
    return json_response(200, {{"devices", std::move(out)}});
  }

  // The node a device route means: `?node=NAME`, else this node (the routes' meaning before
  // fleets). The only query parameter those routes take.
  std::string addressed_node(const request& req) const {
    for (const auto& [key, value] : req.query) {
      if (key != "node") throw bad_parameter(key, "unknown parameter (known: node)");
    }
    auto node = query_value(req, "node");
    if (node && node->empty()) {
      throw bad_parameter("node", "is empty (name a node of the fleet, or leave it out for " +
                                      sched.node() + "'s devices)");
    }
    return node.value_or(sched.node());
  }

  // Device `{index}` of `node`, as GET /api/v1/devices lists it (this node's live, another's as
  // its last heartbeat wrote it); a 404 that says whether the node or its index is unknown.
  json fleet_device(const std::string& node, const std::string& index) {
    std::set<std::string> nodes;
    std::string indices;  // the node's, for the message
    for (auto& d : fleet_devices(store, sched, config.lease_timeout_s, !config.database.empty())) {
      const std::string name = text_of(d, "node");
      nodes.insert(name);
      if (name != node) continue;
      const std::string i = std::to_string(d.value("index", -1));
      if (i == index) return std::move(d);
      indices += (indices.empty() ? "" : ", ") + i;
    }
    if (!nodes.count(node)) {
      std::string known;
      for (const auto& n : nodes)
        known += (known.empty() ? "" : ", ") + n;
      throw api_error(404, "not_found",
                      "no node \"" + node + "\" in the fleet (nodes: " + known + ")",
                      {{"node", "no node \"" + node + "\" (nodes: " + known + ")"}});
    }
    const std::string has = indices.empty() ? "none" : indices;
    throw api_error(404, "not_found",
                    "no device " + index + " on node \"" + node + "\" (its devices: " + has + ")",
                    {{"index", "node \"" + node + "\" has no device " + index +
                                   " (its devices: " + has + ")"}});
  }

  response get_device(const request& req) {
    const std::string node = addressed_node(req);
    if (node == sched.node()) {
      for (const auto& d : sched.devices()) {
        if (std::to_string(d.info.index) == req.captures.at(0)) {
          return json_response(200, device_json(d));
        }
      }
    }
    return json_response(200, fleet_device(node, req.captures.at(0)));
  }

  // Asks for the device's roofline to be measured again (between jobs); 202 with the device.
  // Another node's device is asked of its node through the store, as a cancel reaches it.
  response measure_roofline(const request& req) {
    const std::string node = addressed_node(req);
    if (node == sched.node()) {
      for (const auto& d : sched.devices()) {
        if (std::to_string(d.info.index) == req.captures.at(0) &&
            sched.request_roofline(d.info.index)) {
          json j = device_json(d);
          j["roofline_requested"] = true;
          return json_response(202, j);
        }
      }
    }
    json d = fleet_device(node, req.captures.at(0));  // throws 404 for this node's, seen above
    if (text_of(d, "state") == "offline") {
      throw api_error(409, "node_offline",
                      "node \"" + node + "\" is offline (last heartbeat " +
                          text_of(d, "last_heartbeat_at") +
                          "): only the node that has a device measures it; ask again once it "
                          "runs",
                      {{"node", "is offline"}}, json{{"node", node}});
    }
    store.publish_event(fleet_relay::roofline_request(node, d.value("index", 0)));
    d["roofline_requested"] = true;
    return json_response(202, d);
  }

  struct placement {
    std::uint64_t max_memory = 0;           // the largest memory of a device the job may run on
    engine_kind engine = engine_kind::any;  // what the queue matches devices by
  };

  // The devices of the fleet a spec could run on (live ones: a node that stopped or went quiet
  // takes nothing); checks its engine, placement and kernel language against what exists. A job
  // with user kernels and engine auto is placed on the engine that runs their language: a real
  // one (HIP, then OpenCL) where the fleet has it, else the mock.
  placement check_placement(const job_spec& spec) {
    const auto devices =
        fleet_devices(store, sched, config.lease_timeout_s, !config.database.empty());
    placement p;
    bool any = false, placed_but_language = false;
    std::string language_refusal;  // "kernel.language: ...", why the first device refused
    std::optional<engine_kind> real, mock;
    std::set<std::string> nodes, models;
    std::map<std::string, int> kinds;
    std::size_t live = 0;
    for (const auto& d : devices) {
      if (text_of(d, "state") == "offline") continue;
      ++live;
      nodes.insert(text_of(d, "node"));
      if (!text_of(d, "model").empty()) models.insert(text_of(d, "model"));
      ++kinds[text_of(d, "engine")];
      device_info info;
      info.index = d.value("index", -1);
      info.engine = parse_engine_kind(text_of(d, "engine")).value_or(engine_kind::mock);
      info.vendor = text_of(d, "vendor");
      info.name = text_of(d, "name");
      info.arch = text_of(d, "arch");
      const bool engine_ok = spec.engine == engine_kind::any || spec.engine == info.engine;
      const bool index_ok = !spec.device || *spec.device == info.index;
      const bool node_ok = !spec.device_node || *spec.device_node == text_of(d, "node");
      const bool model_ok = !spec.device_model || *spec.device_model == text_of(d, "model");
      if (!(engine_ok && index_ok && node_ok && model_ok)) continue;
      if (const auto refusal = unsupported_language(spec, info)) {
        if (!placed_but_language) language_refusal = *refusal;
        placed_but_language = true;
        continue;
      }
      any = true;
      p.max_memory = std::max(p.max_memory, d.value("memory_bytes", std::uint64_t(0)));
      auto& slot = info.engine == engine_kind::mock ? mock : real;
      if (!slot) slot = info.engine;
    }
    p.engine = spec.engine;
    const auto is_custom = [](const kernel_spec& k) {
      return std::holds_alternative<custom_spec>(k);
    };
    const bool user_kernels =
        is_custom(spec.kernel) || (spec.fitness.baseline && is_custom(*spec.fitness.baseline)) ||
        std::any_of(spec.variants.begin(), spec.variants.end(),
                    [&](const kernel_variant& v) { return is_custom(v.kernel); });
    if (spec.engine == engine_kind::any && user_kernels && any) {
      // Only the engine that runs the job's kernels may take it, a real one before the mock.
      p.engine = real ? *real : *mock;
    }
    if (!any) {
      auto list = [](const std::set<std::string>& s) {
        std::string out;
        for (const auto& x : s)
          out += (out.empty() ? "" : ", ") + x;
        return out.empty() ? std::string("none") : out;
      };
      std::string have;
      for (const auto& [kind, n] : kinds)
        have += (have.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
      std::vector<field_error> errors;
      if (placed_but_language) {
        const auto colon = language_refusal.find(": ");
        errors.push_back(
            {language_refusal.substr(0, colon), "no device runs this kernel (live devices: " +
                                                    (have.empty() ? std::string("none") : have) +
                                                    "): " + language_refusal.substr(colon + 2)});
      } else if (spec.engine != engine_kind::any && !spec.device && !spec.device_node &&
                 !spec.device_model) {
        const std::string kind = spec.engine == engine_kind::hip      ? "HIP"
                                 : spec.engine == engine_kind::opencl ? "OpenCL"
                                                                      : "mock";
        errors.push_back({"engine", "no live node has a " + kind + " device (there are " +
                                        std::to_string(live) + " device(s), on nodes " +
                                        list(nodes) + ")"});
      } else if (spec.device_node && !nodes.count(*spec.device_node)) {
        errors.push_back({"device.node", "no live node \"" + *spec.device_node +
                                             "\" (live nodes: " + list(nodes) + ")"});
      } else if (spec.device_model && !models.count(*spec.device_model)) {
        errors.push_back({"device.model", "no live device is a " + *spec.device_model +
                                              " (models: " + list(models) + ")"});
      } else if (spec.device || spec.device_node || spec.device_model) {
        errors.push_back({"device", "no live device matches it with engine " +
                                        std::string(to_string(spec.engine)) + " (" +
                                        std::to_string(live) + " device(s) on nodes " +
                                        list(nodes) + ", numbered from 0 on each)"});
      } else {
        errors.push_back(
            {"engine", "no device runs engine " + std::string(to_string(spec.engine))});
      }
      throw validation_error(std::move(errors));
    }
    return p;
  }
  response replay(std::int64_t id) {
    auto rec = store.get(id);
    if (!rec) throw api_error(500, "internal", "job " + std::to_string(id) + " vanished");
    response r = text_response(200, job_json_text(*rec));
    r.headers.emplace_back("Location", "/api/v1/jobs/" + std::to_string(id));
    r.headers.emplace_back("Idempotent-Replayed", "true");
    return r;
  }

  // The Idempotency-Key of a request that creates a job: checked, and a replay of the job it
  // created if it is known (a retry gets that job, whatever has changed since: limits, devices;
  // the request was accepted once).
  std::optional<response> replay_known_key(const std::string& key,
                                           const std::string& request_hash) {
    if (key.size() > 200) {
      throw api_error(400, "invalid_header", "Idempotency-Key is longer than 200 characters",
                      {{"Idempotency-Key", "is longer than 200 characters"}});
    }
    if (!std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
      throw api_error(400, "invalid_header", "Idempotency-Key must be printable ASCII");
    }
    if (key.empty()) return std::nullopt;
    auto known = store.find_by_idempotency_key(key);
    if (!known) return std::nullopt;
    if (known->second != request_hash) throw idempotency_conflict(key, known->first);
    return replay(known->first);
  }

  response submit_job(const request& req) {
    const std::string key = req.header("Idempotency-Key");
    const std::string request_hash = hash_hex(req.body);
    if (auto replayed = replay_known_key(key, request_hash)) return std::move(*replayed);
    const json body = parse_json(req.body);
    job_spec spec = parse_job_spec(body, config.limits);
    const placement where = check_placement(spec);
    const std::uint64_t memory = where.max_memory;
    if (!spec.seed) {
      std::lock_guard lock(seeds_mutex);
      spec.seed = seeds() >> 1;  // kept within int64 for SQLite and JSON readers
    }
    plan_limits limits = config.limits.plan;
    if (memory > 0) limits.max_point_bytes = std::min(limits.max_point_bytes, memory);
    const job_plan plan = compile_plan(spec, limits);
    validate_points(plan);

    job_submission sub;
    sub.name = spec.name;
    sub.labels = spec.labels;
    sub.priority = spec.priority;
    sub.engine = where.engine;
    sub.requested_device = spec.device;
    sub.requested_node = spec.device_node;
    sub.requested_model = spec.device_model;
    sub.op = std::string(op_name(spec.kernel));
    sub.total_points = plan.size() * plan.kernels_per_point();
    sub.spec_json = to_json(spec).dump();
    sub.request_hash = request_hash;
    if (!key.empty()) sub.idempotency_key = key;
    // The store checks the key again inside its transaction: two concurrent first tries with
    // one key create one job.
    const auto outcome = store.submit(sub, unix_time_ms());
    if (outcome.conflict) throw idempotency_conflict(key, outcome.id);
    if (!outcome.created) return replay(outcome.id);
    // Read before enqueueing: the answer shows the job as accepted, not half-way through.
    const std::string text = job_json_text(*store.get(outcome.id));
    events.publish("job", text);
    sched.enqueue(outcome.id);
    response r = text_response(201, text);
    r.headers.emplace_back("Location", "/api/v1/jobs/" + std::to_string(outcome.id));
    return r;
  }

  // Results measured elsewhere become a finished job: parsed, analysed as measured points are,
  // and stored with every row in one transaction.
  response import_results(const request& req) {
    const std::string key = req.header("Idempotency-Key");
    const std::string request_hash = hash_hex(req.body);
    if (auto replayed = replay_known_key(key, request_hash)) return std::move(*replayed);
    const json body = parse_json(req.body);
    import_request imp;
    try {
      imp = parse_import(body, {config.limits.max_points, config.limits.max_labels});
    } catch (const validation_error& e) {
      throw api_error(422, "invalid_import", e.what(), e.errors());
    }
    const std::string format(to_string(imp.format));
    const std::string parameter(point_parameter(imp.format));
    std::vector<result_row> rows;
    rows.reserve(imp.kernels.size());
    for (std::size_t i = 0; i < imp.kernels.size(); ++i) {
      const point_result point =
          imported_point(imp.kernels[i], i, {{parameter, std::int64_t(i)}}, imp.target, format);
      result_row row;
      row.index = i;
      row.ok = true;
      row.median_us = point.origin->time_us.median;
      row.params_json = params_json(point.params).dump();
      const json j = to_json(point);
      row.result_json = j.dump();
      row.score = score_of(j);
      row.flags = flags_of(j);
      rows.push_back(std::move(row));
    }

    job_submission sub;
    sub.name = imp.name;
    sub.labels = imp.labels;
    sub.engine = engine_kind::imported;
    sub.op = "import";
    sub.total_points = rows.size();
    sub.spec_json = import_spec_json(imp).dump();
    sub.request_hash = request_hash;
    if (!key.empty()) sub.idempotency_key = key;
    const auto outcome = store.import_job(sub, rows, unix_time_ms());
    if (outcome.conflict) throw idempotency_conflict(key, outcome.id);
    if (!outcome.created) return replay(outcome.id);
    const std::string text = job_json_text(*store.get(outcome.id));
    events.publish("job", text);
    response r = text_response(201, text);
    r.headers.emplace_back("Location", "/api/v1/jobs/" + std::to_string(outcome.id));
    return r;
  }

  static api_error idempotency_conflict(const std::string& key, std::int64_t id) {
    return api_error(409, "idempotency_conflict",
                     "Idempotency-Key \"" + key + "\" was used for a different request (job " +
                         std::to_string(id) + ")",
                     {}, json{{"job_id", id}});
  }

  response list_jobs(const request& req) {
    list_filter filter;
    filter.limit = std::size_t(int_param(req, "limit", 1, 1000, 50));
    if (auto c = query_value(req, "cursor")) {
      std::int64_t before = 0;
      const auto [end, ec] = std::from_chars(c->data(), c->data() + c->size(), before);
      if (ec != std::errc() || end != c->data() + c->size() || before <= 0) {
        throw bad_parameter("cursor", "is not a cursor this API returned");
      }
      filter.before_id = before;
    }
    for (const auto& [key, value] : req.query) {
      if (key == "status") {
        for (const auto item : detail::split_commas(value)) {
          auto st = parse_job_status(std::string(item));
          if (!st) {
            throw bad_parameter("status", "\"" + std::string(item) +
                                              "\" is not one of queued, running, succeeded, "
                                              "failed, cancelled");
          }
          filter.statuses.push_back(*st);
        }
      } else if (key.rfind("label.", 0) == 0 && key.size() > 6) {
        filter.labels.emplace_back(key.substr(6), value);
      } else if (key != "limit" && key != "cursor") {
        throw bad_parameter(key, "unknown parameter (known: status, label.KEY, limit, cursor)");
      }
    }  // One more than asked tells whether another page exists.
    const std::size_t limit = filter.limit;
    ++filter.limit;
    auto jobs = store.list(filter);
    json next = nullptr;
    if (jobs.size() > limit) {
      jobs.resize(limit);
      next = std::to_string(jobs.back().id);
    }
    json out = json::array();
    for (const auto& j : jobs)
      out.push_back(to_json(j));
    return json_response(200, {{"jobs", std::move(out)}, {"next_cursor", std::move(next)}});
  }

  // Takes one of `limit` places counted by `open` (the caller gives it back), or returns the 429
  // to answer when none is left.
  static std::optional<response> take_place(std::atomic<int>& open, int limit, const char* type,
                                            const std::string& what, const std::string& advice,
                                            int retry_after_s) {
    if (open.fetch_add(1) < limit) return std::nullopt;
    open.fetch_sub(1);
    response r = json_response(
        429, error_body(type, what + " (limit " + std::to_string(limit) + "); " + advice));
    r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
    return r;
  }

  job_record find_job(std::int64_t id) {
    auto rec = store.get(id);
    if (!rec) throw api_error(404, "not_found", "no job " + std::to_string(id));
    return std::move(*rec);
  }

  response get_job(const request& req) {
    const std::int64_t id = job_id_of(req);
    for (const auto& [key, value] : req.query) {
      if (key != "wait") throw bad_parameter(key, "unknown parameter (known: wait)");
    }
    std::optional<double> wait_s;
    if (auto w = query_value(req, "wait")) {
      double seconds = -1;
      const auto [end, ec] = std::from_chars(w->data(), w->data() + w->size(), seconds);
      if (ec != std::errc() || end != w->data() + w->size()) {
        throw bad_parameter("wait", "\"" + *w + "\" is not a number of seconds");
      }
      if (!(seconds >= 0 && seconds <= k_max_wait_s)) {
        throw bad_parameter("wait", "must be between 0 and " + std::to_string(int(k_max_wait_s)));
      }
      wait_s = seconds;
    }
    job_record rec = find_job(id);
    if (wait_s && *wait_s > 0 && !is_terminal(rec.status)) {
      const double seconds = *wait_s;
      if (auto busy = take_place(long_polls, config.max_long_polls, "too_many_waiters",
                                 "too many requests are waiting on jobs",
                                 "retry, or poll without wait", 1)) {
        return std::move(*busy);
      }
      struct release {
        std::atomic<int>& n;
        ~release() { n.fetch_sub(1); }
      } guard{long_polls};
      const auto deadline =
          job_waiters::clock::now() + std::chrono::duration_cast<job_waiters::clock::duration>(
                                          std::chrono::duration<double>(seconds));
      waiters.wait(id, deadline, [&] {
        auto r = store.get(id);
        return !r || is_terminal(r->status);
      });
      rec = find_job(id);
    }
    return text_response(200, job_json_text(rec));
  }

  response cancel_job(const request& req) {
    const std::int64_t id = job_id_of(req);
    switch (store.cancel(id, unix_time_ms())) {
      case cancel_outcome::not_found:
        throw api_error(404, "not_found", "no job " + std::to_string(id));
      case cancel_outcome::already_finished: {
        const auto rec = find_job(id);
        throw api_error(
            409, "job_finished",
            "job " + std::to_string(id) + " already " + std::string(to_string(rec.status)), {},
            json{{"job_id", id}, {"job_status", to_string(rec.status)}});
      }
      case cancel_outcome::cancelled:
        waiters.notify(id);
        [[fallthrough]];
      case cancel_outcome::requested:
        sched.cancel(id);
        break;
    }
    const std::string text = job_json_text(find_job(id));
    events.publish("job", text);  // cancelled, or cancel_requested while its point finishes
    return text_response(200, text);
  }

  response results(const request& req) {
    const std::int64_t id = job_id_of(req);
    const std::string format = query_value(req, "format").value_or("json");
    if (format != "json" && format != "csv" && format != "jsonl") {
      throw bad_parameter("format", "\"" + format + "\" is not one of json, csv, jsonl");
    }
    for (const auto& [key, value] : req.query) {
      if (key != "format" && key != "offset" && key != "limit" && key != "fields") {
        throw bad_parameter(key, "unknown parameter (known: format, offset, limit, fields)");
      }
    }
    const auto offset = std::uint64_t(int_param(req, "offset", 0, INT64_MAX, 0));
    const auto limit = std::uint64_t(int_param(req, "limit", 1, INT64_MAX, INT64_MAX));
    const auto fields_list = query_value(req, "fields");
    if (fields_list && format == "csv") {
      throw bad_parameter("fields", "applies to json and jsonl (csv has fixed columns)");
    }
    const job_record rec = find_job(id);

    std::vector<std::string> names;
    bool variants = false;
    if (format == "csv" || fields_list) {
      const json spec = json::parse(rec.spec_json);
      for (const auto& [name, values] : spec["sweep"].items())
        names.push_back(name);
      variants = spec.contains("variants");
    }
    std::optional<result_fields> fields;
    if (fields_list) {
      try {
        fields = result_fields::parse(*fields_list, names);
      } catch (const std::invalid_argument& e) {
        throw bad_parameter("fields", e.what());
      }
    }
    // Stream page by page: a 100,000-point job never sits in memory whole. The first page is
    // read here, so that a store that cannot be read answers 503 before the status line goes
    // out; a later page that fails ends the response unfinished (the client sees it cut off).
    struct cursor_state {
      std::uint64_t remaining;
      std::optional<std::vector<stored_result>> first_page;
      std::uint64_t emitted = 0;
      // The next pages start after the last index read.
      std::optional<std::uint64_t> last_index = std::nullopt;
      bool started = false, finished = false;
    };
    auto st = std::make_shared<cursor_state>(
        cursor_state{limit, store.results(id, offset, std::min(limit, k_results_page))});
    response r;
    r.content_type = format == "csv"     ? "text/csv; charset=utf-8"
                     : format == "jsonl" ? "application/x-ndjson"
                                         : "application/json";
    job_store* s = &store;
    const std::string head =
        format == "json"
            ? json{{"job_id", id},
                   {"status", to_string(rec.status)},
                   {"progress", {{"done", rec.progress.done}, {"total", rec.progress.total}}}}
                  .dump()
            : "";
    r.stream = [s, id, st, format, names, head, fields, variants](std::string& chunk) {
      if (st->finished) return false;
      if (!st->started) {
        st->started = true;
        if (format == "json") {
          chunk = head.substr(0, head.size() - 1) + ",\"results\":[";
        } else if (format == "csv") {
          chunk = csv_header(names, variants);
        }
      }
      const auto page = std::min(st->remaining, k_results_page);
      std::vector<stored_result> rows;
      if (st->first_page) {
        rows = std::move(*st->first_page);
        st->first_page.reset();
      } else {
        rows = s->results_after(id, *st->last_index, page);
      }
      if (!rows.empty()) st->last_index = rows.back().index;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (format == "json" && st->emitted++ > 0) chunk += ",";
        if (format != "csv") {
          if (fields) {
            fields->project(rows[i].result_json, chunk);
          } else {
            chunk += rows[i].result_json;
          }
          if (format == "jsonl") chunk += "\n";
        } else {
          chunk += csv_line(json::parse(rows[i].result_json), names, variants);
        }
      }
      st->remaining -= rows.size();
      if (rows.size() < k_results_page || st->remaining == 0) {
        if (format == "json") chunk += "]}";
        st->finished = true;
      }
      return true;
    };
    return r;
  }

  // Server-Sent Events: "job" (a job's state, as GET /jobs/{id} shows it) and "points" (points
  // stored: index range, progress), each with an id. A client that reconnects with
  // Last-Event-ID gets what it missed, or a "reset" event when the daemon no longer has it.
  response events_stream(const request& req) {
    std::uint64_t after = events.last_id();
    std::string last = req.header("Last-Event-ID");
    if (auto q = query_value(req, "last_event_id")) last = *q;
    for (const auto& [key, value] : req.query) {
      if (key != "last_event_id") {
        throw bad_parameter(key, "unknown parameter (known: last_event_id)");
      }
    }
    bool stale = false;  // the client's Last-Event-ID is not this daemon's
    if (!last.empty()) {
      std::uint64_t id = 0;
      const auto [end, ec] = std::from_chars(last.data(), last.data() + last.size(), id);
      if (ec != std::errc() || end != last.data() + last.size()) {
        throw bad_parameter("last_event_id", "\"" + last + "\" is not an event id");
      }
      // An id from before a daemon restart (larger than any now) starts from now with a reset.
      if (id <= after) {
        after = id;
      } else {
        stale = true;
      }
    }
    if (auto busy = take_place(event_streams, config.max_event_streams, "too_many_streams",
                               "too many event streams are open",
                               "retry later, or poll the jobs list", 5)) {
      return std::move(*busy);
    }
    struct stream_state {
      std::atomic<int>& open;
      std::uint64_t after;
      bool stale;  // the client's Last-Event-ID is not this daemon's
      bool started = false;
      ~stream_state() { open.fetch_sub(1); }
    };
    // Built in place: a temporary's destructor would give the stream's place back.
    auto st = std::make_shared<stream_state>(event_streams, after, stale);
    response r;
    r.content_type = "text/event-stream";
    r.headers.emplace_back("Cache-Control", "no-cache");
    r.headers.emplace_back("X-Accel-Buffering", "no");  // proxies: do not buffer the stream
    event_hub* hub = &events;
    r.stream = [hub, st](std::string& chunk) {
      if (!st->started) {
        st->started = true;
        chunk = "retry: 2000\n";
        if (st->stale) {
          // The client's state came from a daemon before a restart: it must reload.
          chunk += "id: " + std::to_string(st->after) + "\nevent: reset\ndata: {}\n\n";
        }
        chunk += "event: ready\ndata: {\"last_event_id\":" + std::to_string(st->after) + "}\n\n";
        return true;
      }
      auto b = hub->wait(st->after, event_hub::clock::now() + k_event_heartbeat, k_event_linger);
      if (b.stopping) return false;
      if (b.gap) {
        chunk += "event: reset\ndata: {}\n\n";  // missed events: reload everything
      }
      if (b.events.empty()) {
        chunk += ": keep-alive\n\n";
        return true;
      }
      st->after = b.events.back().id;
      for (const auto& e : coalesce_points(std::move(b.events))) {
        chunk +=
            "id: " + std::to_string(e.id) + "\nevent: " + e.type + "\ndata: " + e.data + "\n\n";
      }
      return true;
    };
    return r;
  }

  response asset(const request& req) {
    std::string path = req.path;
    if (!req.captures.empty()) {
      // /assets/{file}: a plain file name, so nothing outside the asset directory is reachable.
      const auto& file = req.captures.front();
      const bool plain =
          file.front() != '.' && std::all_of(file.begin(), file.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
          });
      if (!plain) throw api_error(404, "not_found", "no such file: " + path);
    }
    if (!config.web_root.empty() && path != "/api/v1/openapi.yaml") {
      // Development: serve the page from disk so edits show without a rebuild. A file that is
      // not there (ECharts, from node_modules) comes from the embedded copy.
      const std::string file = path == "/" ? "index.html" : path.substr(path.rfind('/') + 1);
      if (std::ifstream in(config.web_root + "/" + file, std::ios::binary); in) {
        response r;
        r.body.assign(std::istreambuf_iterator<char>(in), {});
        const auto* embedded = find_web_asset(path);
        r.content_type =
            embedded ? std::string(embedded->content_type) : "application/octet-stream";
        r.headers.emplace_back("Cache-Control", "no-store");
        return r;
      }
    }
    const web_asset* a = find_web_asset(path);
    if (!a) throw api_error(404, "not_found", "no such file: " + path);
    response r;
    r.headers.emplace_back("ETag", std::string(a->etag));
    r.headers.emplace_back("Cache-Control", "no-cache");
    if (!a->gzip.empty()) r.headers.emplace_back("Vary", "Accept-Encoding");
    if (etag_matches(req.header("If-None-Match"), a->etag)) {
      r.status = 304;
      r.content_type.clear();
      return r;
    }
    r.content_type = std::string(a->content_type);
    const bool gzip = !a->gzip.empty() && accepts_gzip(req.header("Accept-Encoding"));
    if (gzip) r.headers.emplace_back("Content-Encoding", "gzip");
    r.body = std::string(gzip ? a->gzip : a->data);
    return r;
  }

  // ---- plumbing ----

  static void send(const response& r, httplib::Response& res) {
    res.status = r.status;
    for (const auto& [k, v] : r.headers)
      res.set_header(k.c_str(), v.c_str());
    if (r.stream) {
      auto stream = r.stream;
      // httplib calls the provider after the status line is out and outside its exception
      // handler: a throw here would end the process. A stream that fails (a page the store
      // cannot read) ends the response unfinished instead, which the client sees as cut off.
      res.set_chunked_content_provider(
          r.content_type, [stream](std::size_t, httplib::DataSink& sink) {
            std::string chunk;
            try {
              while (chunk.empty()) {
                if (!stream(chunk)) {
                  sink.done();
                  return true;
                }
              }
            } catch (const std::exception& e) {
              spdlog::error("a streamed response ended unfinished: {}", e.what());
              return false;
            }
            return sink.write(chunk.data(), chunk.size());
          });
    } else if (!r.content_type.empty()) {
      res.set_content(r.body, r.content_type.c_str());
    }
  }

  static void send_error(int status, const std::string& type, const std::string& message,
                         httplib::Response& res, const std::vector<field_error>& details = {}) {
    res.status = status;
    res.set_content(error_body(type, message, details).dump(), "application/json");
  }

  // Every request comes here: find its route, or answer 404, or 405 with Allow.
  void route_request(const httplib::Request& hreq, httplib::Response& res) {
    const auto started = std::chrono::steady_clock::now();
    const std::string_view templ = handle(hreq, res);
    requests.observe(
        hreq.method, templ, res.status,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }

  // Routes, checks access, and answers; returns the route template (for metrics).
  std::string_view handle(const httplib::Request& hreq, httplib::Response& res) {
    const std::string origin = access.allowed_origin(hreq.get_header_value("Origin"));
    if (!origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
    }
    std::vector<std::string> captures;
    std::string allow;
    const route* found = nullptr;
    std::string_view templ = "unmatched";
    for (const auto& r : table()) {
      if (!match(r.path, hreq.path, captures)) continue;
      templ = r.path;
      if (r.method == hreq.method) {
        found = &r;
        break;
      }
      if (allow.find(r.method) == std::string::npos) {
        allow += (allow.empty() ? "" : ", ") + r.method;
      }
    }
    if (!found) {
      if (!allow.empty() && hreq.method == "OPTIONS" && access.cors_enabled()) {
        // A CORS preflight.
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", allow);
        res.set_header("Access-Control-Allow-Headers",
                       "Content-Type, Authorization, Idempotency-Key");
        res.set_header("Access-Control-Max-Age", "600");
      } else if (!allow.empty()) {
        res.set_header("Allow", allow);
        send_error(405, "method_not_allowed",
                   hreq.method + " is not allowed on " + hreq.path + " (allowed: " + allow + ")",
                   res);
      } else {
        send_error(404, "not_found", "no route " + hreq.method + " " + hreq.path, res);
      }
      return templ;
    }
    if (needs_token(*found) && !access.authorized(hreq.get_header_value("Authorization"))) {
      res.set_header("WWW-Authenticate", R"(Bearer realm="kernelscan")");
      send_error(401, "unauthorized",
                 hreq.has_header("Authorization")
                     ? "the bearer token is not valid"
                     : "this request needs an Authorization: Bearer <token> header",
                 res);
      return templ;
    }
    if (found->fn == &impl::submit_job || found->fn == &impl::import_results) {
      if (const auto wait =
              access.take_submission(hreq.remote_addr, std::chrono::steady_clock::now())) {
        const int seconds = std::max(1, int(std::ceil(*wait)));
        res.set_header("Retry-After", std::to_string(seconds));
        send_error(429, "rate_limited",
                   "too many job submissions from " + hreq.remote_addr + " (limit " +
                       std::to_string(int(config.rate_limit)) + " per minute); retry in " +
                       std::to_string(seconds) + " s",
                   res);
        return templ;
      }
    }
    dispatch(found->fn, std::move(captures), hreq, res);
    return templ;
  }

  // Writes need a token when tokens are configured; reads only with --auth-reads; health
  // probes and the page's static files never (they carry no data).
  bool needs_token(const route& r) const {
    if (!access.tokens_configured()) return false;
    if (r.method != "GET") return true;
    if (r.fn == &impl::healthz || r.fn == &impl::readyz || r.fn == &impl::asset) return false;
    return access.reads_need_token();
  }

  void dispatch(handler fn, std::vector<std::string> captures, const httplib::Request& hreq,
                httplib::Response& res) {
    request req;
    req.method = hreq.method;
    req.path = hreq.path;
    req.captures = std::move(captures);
    req.query.insert(hreq.params.begin(), hreq.params.end());
    req.header = [&hreq](const std::string& name) { return hreq.get_header_value(name.c_str()); };
    req.body = hreq.body;
    try {
      send((this->*fn)(req), res);
      // A body that is already encoded (a precompressed asset): httplib would compress it
      // again, as it decides by content type and Accept-Encoding alone. The request is
      // httplib's own non-const object (see configure()).
      if (res.has_header("Content-Encoding")) {
        const_cast<httplib::Request&>(hreq).headers.erase("Accept-Encoding");
      }
    } catch (const api_error& e) {
      res.status = e.status();
      res.set_content(e.body().dump(), "application/json");
    } catch (const validation_error& e) {
      send_error(422, "invalid_spec", e.what(), res, e.errors());
    } catch (const json_syntax_error& e) {
      send_error(400, "invalid_json", e.what(), res);
    } catch (const storage_error& e) {
      spdlog::error("{} {}: storage: {}", hreq.method, hreq.path, e.what());
      if (e.unavailable()) {
        res.set_header("Retry-After", "5");
        send_error(503, "storage_unavailable", std::string("storage is unavailable: ") + e.what(),
                   res);
      } else {
        send_error(500, "internal", std::string("storage error: ") + e.what(), res);
      }
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", hreq.method, hreq.path, e.what());
      send_error(500, "internal", e.what(), res);
    }
  }

  void configure() {
    server.new_task_queue = [n = config.http_threads] {
      return new httplib::ThreadPool(std::size_t(n));
    };
    server.set_payload_max_length(config.max_body_bytes);
    server.set_keep_alive_max_count(1000);
    // Headers and body go out in separate writes; with Nagle's algorithm and delayed ACKs each
    // keep-alive request would stall ~40 ms (measured: 46 req/s instead of thousands).
    server.set_tcp_nodelay(true);
    server.set_read_timeout(30s);
    server.set_write_timeout(30s);
    // `curl -d @job.json` labels its body application/x-www-form-urlencoded, which httplib caps at
    // 8 KB and parses as a form. The API only takes JSON, so such a body is read as JSON. The
    // request is httplib's own non-const object (the handler type is const only by signature).
    //
    // httplib answers "Accept-Encoding: br" with brotli at its slowest setting (quality 11): a
    // 10,000-point result set took 15 s to compress instead of 0.3 s to send. Browsers always
    // offer br, so "br" is dropped from what the client accepts and gzip (level 6) serves them.
    //
    // A request with neither Content-Length nor Transfer-Encoding has an empty body (RFC 9112
    // §6.3: only a response is read until the connection closes). httplib 0.11 reads such a
    // POST until the connection closes instead, so `curl -X POST .../cancel`, which keeps the
    // connection open, waited out the read timeout and got 400. The pre-routing handler runs
    // before httplib reads the body, so the body's length is stated here.
    server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
      auto& r = const_cast<httplib::Request&>(req);
      if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
        r.headers.emplace("Content-Length", "0");
      }
      if (req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0) {
        r.headers.erase("Content-Type");
        r.headers.emplace("Content-Type", "application/json");
      }
      if (const auto accepted = req.get_header_value("Accept-Encoding");
          accepted.find("br") != std::string::npos) {
        std::string kept;
        for (auto item : detail::split_commas(accepted)) {
          item = detail::trim_spaces(item);
          if (item.empty() || item.rfind("br", 0) == 0) continue;
          if (!kept.empty()) kept += ", ";
          kept += item;
        }
        r.headers.erase("Accept-Encoding");
        r.headers.emplace("Accept-Encoding", kept);
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    const auto all = [this](const httplib::Request& req, httplib::Response& res) {
      route_request(req, res);
    };
    server.Get(".*", all);
    server.Post(".*", all);
    server.Put(".*", all);
    server.Patch(".*", all);
    server.Delete(".*", all);
    server.Options(".*", all);
    httplib::Server::HandlerWithResponse on_error = [this](const httplib::Request& req,
                                                           httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      if (res.status == 404) {
        send_error(404, "not_found", "no route " + req.method + " " + req.path, res);
      } else if (res.status == 413) {
        send_error(413, "payload_too_large",
                   "request body exceeds " + std::to_string(config.max_body_bytes) + " bytes", res);
      } else if (res.status == 400) {
        send_error(400, "bad_request", "malformed HTTP request", res);
      } else {
        send_error(res.status, "http_error", "HTTP " + std::to_string(res.status), res);
      }
      return httplib::Server::HandlerResponse::Handled;
    };
    server.set_error_handler(std::move(on_error));
    server.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          send_error(500, "internal", what, res);
        });
    server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      spdlog::debug("{} {} -> {}", req.method, req.path, res.status);
    });
  }
};

http_api::http_api(job_store& store, scheduler& sched, job_waiters& waiters, event_hub& events,
                   const serve_config& config)
    : m_impl(std::make_unique<impl>(store, sched, waiters, events, config)) {
  m_impl->configure();
}

http_api::~http_api() = default;

int http_api::bind(const std::string& host, int port) {
  const int bound = port == 0 ? m_impl->server.bind_to_any_port(host)
                              : (m_impl->server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) +
                             " (address in use or not available)");
  }
  return bound;
}

bool http_api::run() {
  return m_impl->server.listen_after_bind();
}

void http_api::stop() {
  m_impl->server.stop();
}

std::vector<std::pair<std::string, std::string>> http_api::routes() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : impl::table())
    out.emplace_back(r.method, r.path);
  return out;
}

}  // namespace kernelscan
