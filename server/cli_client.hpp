#pragma once
// The HTTP side of the command-line client (`kernelscan submit`, `jobs`, `results`): one call
// per API operation against a running daemon, answers as the API's JSON or text.
//
// Errors: an unreachable daemon throws connection_error (naming the URL); an answer with an
// HTTP error status throws api_failure with the error body's type, message and details; an
// answer that is not the API's (without what the operation returns) throws foreign_answer.
// Ownership: owns its HTTP connection. Threading: one thread at a time, but for interrupt(),
// which another thread may call while a request runs. Units: seconds.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "api/api_error.hpp"
#include "api/json.hpp"

namespace httplib {
class Result;
}

namespace kernelscan {

class connection_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error answer of the API: {"error": {"type", "message", "details"}}. The server's own error
// type: the client reads back what the server threw.
using api_failure = api_error;

// An answer that is not the API's: an error status without the API's error body, or a success
// whose body is not the JSON the operation returns (another web server at the URL, a proxy's
// page). Its message names the server, the request, the status and the start of the body.
class foreign_answer : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct job_filter {
  std::string status;                                       // "queued,running"; empty: any
  std::vector<std::pair<std::string, std::string>> labels;  // all must match
  std::string task;  // only the jobs submitted to this evaluation task; empty: any
};

class api_client {
 public:
  // `server` is a base URL: http://HOST:PORT or https://HOST:PORT, optionally with a path
  // prefix (a reverse proxy's); a URL without a scheme is taken as http. `token`, when not
  // empty, is sent as `Authorization: Bearer`. Throws std::invalid_argument for a URL it cannot
  // use.
  api_client(const std::string& server, std::string token);
  ~api_client();
  api_client(const api_client&) = delete;
  api_client& operator=(const api_client&) = delete;

  const std::string& server() const { return m_server; }

  struct submitted {
    json job;
    bool replayed = false;  // an earlier submission with the same Idempotency-Key
  };
  // POST /api/v1/jobs with the spec text as given; with `task`, the body is a candidate's
  // submission to that evaluation task (POST /api/v1/tasks/{task}/submissions).
  submitted submit(const std::string& spec_text, const std::string& idempotency_key,
                   const std::string& task = "");

  // GET /api/v1/tasks: {"tasks": [...]}, retired ones included.
  json tasks();
  // GET /api/v1/tasks/{name}: what a candidate needs (held-out sizes only for an operator).
  json task(const std::string& name);

  // GET /api/v1/jobs/{id}, with ?wait=S when `wait_s` is set (0 < S <= 600). A 429
  // `too_many_waiters` is retried after its Retry-After.
  json job(std::int64_t id, std::optional<double> wait_s = std::nullopt);

  // GET /api/v1/jobs, following next_cursor until `limit` jobs or the last page. Returns the
  // shape of one page, {"jobs": [...], "next_cursor": ...}, with the cursor of the last page
  // read (null when there are no more jobs).
  json jobs(const job_filter& filter, std::int64_t limit);
  // One page of at most `limit` jobs after `cursor` (a page's `next_cursor`; null: the newest).
  json jobs_page(const job_filter& filter, std::int64_t limit, const json& cursor);

  // GET /api/v1/jobs/{id}/results, every row, `page_size` rows per request. json: one
  // ResultsPage (job_id, status and progress from the first page) holding all rows; csv: the
  // header once, then every row.
  json results_json(std::int64_t id, std::int64_t page_size);
  std::string results_csv(std::int64_t id, std::int64_t page_size);

  // POST /api/v1/jobs/{id}/cancel: the job as it is after the cancel.
  json cancel(std::int64_t id) { return job_action(id, "cancel"); }
  // POST /api/v1/jobs/{id}/confirm: the job with its withheld score confirmed (an operator's).
  json confirm(std::int64_t id) { return job_action(id, "confirm"); }
  // DELETE /api/v1/jobs/{id}: the job, its results, spec and labels are gone (a job that ended;
  // 409 job_not_finished while it is queued or running). Only the API's 204 says so: another
  // success status is a foreign_answer.
  void delete_job(std::int64_t id);

  // Ends the request running on another thread now (it throws connection_error), and any that
  // begins before resume(). Thread-safe.
  void interrupt();
  // Requests may run again (on a new connection).
  void resume();

  // GET /api/v1/devices: {"devices": [...]}.
  json devices();
  // GET /api/v1/devices/{index}, of `node` (empty: the answering daemon's).
  json device(std::int64_t index, const std::string& node);
  // POST /api/v1/devices/{index}/roofline: the device as the answer gives it (202).
  json measure_roofline(std::int64_t index, const std::string& node);

 private:
  // POST /api/v1/jobs/{id}/{action}, without a body: the job as the answer gives it.
  json job_action(std::int64_t id, const char* action);
  // POST of `body` (JSON) to `path_and_query`: the answer's JSON, checked by `lacks`.
  json post(const std::string& path_and_query, const std::string& body,
            const std::function<std::string(const json&)>& lacks);
  // The body of a 2xx answer; throws connection_error or api_failure otherwise.
  std::string get(const std::string& path_and_query, double read_timeout_s);
  // The body of `res`, an answer to `request` ("GET /api/v1/jobs"), where it is a success;
  // throws connection_error, api_failure or foreign_answer otherwise.
  std::string body_of(const std::string& request, const httplib::Result& res) const;
  // `body` as a JSON object; foreign_answer where it is not one, or where `lacks` says what it
  // lacks (a non-empty text).
  json json_of(const std::string& request, const std::string& body,
               const std::function<std::string(const json&)>& lacks) const;
  foreign_answer foreign(const std::string& request, int status, const std::string& content_type,
                         const std::string& body, const std::string& lacking) const;

  struct impl;
  std::unique_ptr<impl> m_impl;
  std::string m_server;
  std::string m_prefix;  // path prefix of the base URL, without a trailing slash
  std::string m_token;
  std::atomic<bool> m_interrupted{false};
};

// The query-string form of `text` (RFC 3986 unreserved characters kept, the rest %XX).
std::string percent_encode(const std::string& text);

}  // namespace kernelscan
