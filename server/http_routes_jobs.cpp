#include <charconv>
#include <memory>

#include <spdlog/spdlog.h>

#include "api/held_out.hpp"
#include "api/job_codec.hpp"
#include "api/result_codec.hpp"
#include "api/result_fields.hpp"
#include "server/detail/comma_list.hpp"
#include "server/detail/gzip_stream.hpp"
#include "server/detail/http_api_impl.hpp"
#include "server/event_stream.hpp"
#include "server/retention.hpp"

namespace kernelscan {
namespace {

constexpr std::uint64_t k_results_page = 512;
constexpr double k_max_wait_s = 600;

std::int64_t job_id_of(const request& req) {
  std::int64_t id = 0;
  const auto& s = req.captures.at(0);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || end != s.data() + s.size()) {
    throw api_error(404, "not_found", "no job " + s);
  }
  return id;
}

// Takes one of `limit` places counted by `open` (the caller gives it back), or returns the 429
// to answer when none is left.
std::optional<response> take_place(std::atomic<int>& open, int limit, const char* type,
                                   const std::string& what, const std::string& advice,
                                   int retry_after_s) {
  if (open.fetch_add(1) < limit) return std::nullopt;
  open.fetch_sub(1);
  response r = json_response(
      429, error_body(type, what + " (limit " + std::to_string(limit) + "); " + advice));
  r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
  return r;
}

}  // namespace

response created(const submit_result& s) {
  response r = text_response(s.created ? 201 : 200, s.job_text);
  r.headers.emplace_back("Location", "/api/v1/jobs/" + std::to_string(s.id));
  if (!s.created) r.headers.emplace_back("Idempotent-Replayed", "true");
  return r;
}

response http_api::impl::submit_job(const request& req) {
  return created(submissions.submit(req.body, req.header("Idempotency-Key")));
}

// Results measured elsewhere become a finished job: parsed, analysed as measured points are,
// and stored with every row in one transaction.
response http_api::impl::import_results(const request& req) {
  return created(submissions.import_results(req.body, req.header("Idempotency-Key")));
}

response http_api::impl::list_jobs(const request& req) {
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
    } else if (key == "task") {
      if (value.empty()) throw bad_parameter("task", "is empty (name a task)");
      filter.task = value;
    } else if (key != "limit" && key != "cursor") {
      throw bad_parameter(key, "unknown parameter (known: status, label.KEY, task, limit, cursor)");
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
  for (auto& j : jobs) {
    // A best point or the error may be about a held-out point, and the fitness count held-out
    // scores a candidate may not see: the spec tells (list views carry none).
    if (j.task && (j.best || j.error || !j.fitness_json.empty()) && !req.operator_access) {
      redact_job(j, store.spec_json(j.id).value_or(""));
    }
    out.push_back(to_json(j));
  }
  return json_response(200, {{"jobs", std::move(out)}, {"next_cursor", std::move(next)}});
}

job_record http_api::impl::find_job(std::int64_t id) {
  auto rec = store.get(id);
  if (!rec) throw api_error(404, "not_found", "no job " + std::to_string(id));
  return std::move(*rec);
}

response http_api::impl::get_job(const request& req) {
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
    if (auto busy =
            take_place(long_polls, config.max_long_polls, "too_many_waiters",
                       "too many requests are waiting on jobs", "retry, or poll without wait", 1)) {
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
  if (rec.task && !req.operator_access) redact_job(rec, "");
  return text_response(200, job_json_text(rec));
}

response http_api::impl::cancel_job(const request& req) {
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
  return text_response(200, req.operator_access ? text : redacted_job_event(text));
}

response http_api::impl::confirm_job(const request& req) {
  const std::int64_t id = job_id_of(req);
  job_record rec = find_job(id);
  if (!is_terminal(rec.status)) {
    throw api_error(409, "job_not_finished",
                    "job " + std::to_string(id) + " is " + std::string(to_string(rec.status)) +
                        ": its score is decided when it ends",
                    {}, json{{"job_id", id}, {"job_status", to_string(rec.status)}});
  }
  const json fitness = rec.fitness_json.empty() ? json() : parse_json(rec.fitness_json);
  const bool withheld = fitness.is_object() && fitness.value("withheld", false);
  const bool confirmed = fitness.is_object() && fitness.value("confirmed", false);
  if (!withheld && !confirmed) {
    // A job scores only where it asks to (a fitness baseline or target), and only a score an
    // excessive speedup withheld waits for a confirmation.
    throw api_error(409, "nothing_to_confirm",
                    "job " + std::to_string(id) +
                        (fitness.is_object() ? "'s score is not withheld: nothing to confirm"
                                             : " has no score (it asked for none): nothing to "
                                               "confirm"),
                    {}, json{{"job_id", id}});
  }
  if (withheld) {
    const std::string f = job_fitness_text(store.scored_points(id), rec.progress.total,
                                           rec.status == job_status::succeeded,
                                           score_rules{true, true}, public_points(rec.spec_json));
    if (!store.set_fitness(id, f)) {
      throw api_error(409, "job_not_finished", "job " + std::to_string(id) + " has not ended");
    }
    rec = find_job(id);
    const std::string text = job_json_text(rec);
    events.publish("job", text);
  }
  if (rec.task && !req.operator_access) redact_job(rec, "");
  return text_response(200, job_json_text(rec));
}

// A job that ended goes, with its results; one that may still change is refused, so that
// nothing a worker is about to store or a waiter is about to read vanishes under it.
response http_api::impl::delete_job(const request& req) {
  const std::int64_t id = job_id_of(req);
  switch (delete_and_announce(store, events, id)) {
    case delete_outcome::not_found:
      throw api_error(404, "not_found", "no job " + std::to_string(id));
    case delete_outcome::not_finished: {
      const auto status = std::string(to_string(find_job(id).status));
      throw api_error(
          409, "job_not_finished",
          "job " + std::to_string(id) + " is " + status + ": cancel it first, then delete it", {},
          json{{"job_id", id}, {"job_status", status}});
    }
    case delete_outcome::deleted:
      break;
  }
  spdlog::info("job {}: deleted", id);
  response r;
  r.status = 204;
  r.content_type.clear();
  return r;
}

response http_api::impl::results(const request& req) {
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
  // Rows from this index on are a task's held-out points, which a candidate sees redacted.
  std::optional<std::uint64_t> held_from;
  bool private_scores = false;  // and without their scores
  if (rec.task && !req.operator_access && rec.spec_json.find("\"held_out\"") != std::string::npos) {
    const json spec = parse_json(rec.spec_json);
    held_from = public_points(spec);
    private_scores = held_from && private_held_out_scores(spec);
  }
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
  r.stream = [s, id, st, format, names, head, fields, variants, held_from,
              private_scores](std::string& chunk) {
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
      if (held_from && rows[i].index >= *held_from) {
        rows[i].result_json = redacted_row(rows[i].result_json, private_scores);
      }
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
      // A job deleted while it was read lost rows the pages had not reached: the answer ends
      // unfinished (the client sees it cut off), never complete with rows missing.
      if (!s->exists(id)) {
        throw std::runtime_error("job " + std::to_string(id) +
                                 " was deleted while its results "
                                 "were read");
      }
      if (format == "json") chunk += "]}";
      st->finished = true;
    }
    return true;
  };
  // Compressed here, at zlib's fastest level: httplib would leave JSON lines (what the dashboard
  // reads) as they are and compress JSON and CSV at level 6. A 100,000-point job's rows as the
  // dashboard asks for them are 53 MB, 13.8 MB at level 1 and 12.3 MB at level 6; level 1
  // compressed them at about 150 MB/s on a 2-core VM, faster than a gigabit link carries them,
  // level 6 at 33 MB/s.
  r.headers.emplace_back("Vary", "Accept-Encoding");
  if (accepts_gzip(req.header("Accept-Encoding"))) {
    r.headers.emplace_back("Content-Encoding", "gzip");
    r.stream = detail::gzip_stream(std::move(r.stream), 1);
  }
  return r;
}

// Server-Sent Events: "job" (a job's state, as GET /jobs/{id} shows it) and "points" (points
// stored: index range, progress), each with an id. A client that reconnects with
// Last-Event-ID gets what it missed, or a "reset" event when the daemon no longer has it.
response http_api::impl::events_stream(const request& req) {
  std::uint64_t after = events.last_id();
  std::string last = req.header("Last-Event-ID");
  std::string from = "Last-Event-ID";  // the header, or the query parameter that overrides it
  if (auto q = query_value(req, "last_event_id")) {
    last = *q;
    from = "last_event_id";
  }
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
      throw bad_parameter(from, "\"" + last + "\" is not an event id");
    }
    // 0 asks for every event the daemon holds. An id this daemon did not issue (from before a
    // restart, or from another node of a fleet, whose ids are its own) starts from now with a
    // reset: the client must reload what it holds.
    if (id == 0) {
      after = events.first_id();
    } else if (events.issued(id)) {
      after = id;
    } else {
      stale = true;
    }
  }
  if (auto busy =
          take_place(event_streams, config.max_event_streams, "too_many_streams",
                     "too many event streams are open", "retry later, or poll the jobs list", 5)) {
    return std::move(*busy);
  }
  response r;
  r.content_type = "text/event-stream";
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Accel-Buffering", "no");  // proxies: do not buffer the stream
  r.stream = event_stream(events, after, stale, event_streams, !req.operator_access, req.hung_up);
  return r;
}

}  // namespace kernelscan
