#pragma once
// The daemon <-> worker protocol: one JSON object per line over the worker's stdin/stdout.
//
//   worker -> daemon  {"type":"ready","device":{...}}            once, after start-up
//   daemon -> worker  {"type":"job","job":7,"spec":{...}}         before its points
//   daemon -> worker  {"type":"measure","seq":12,"job":7,"index":3}
//   daemon -> worker  {"type":"drop","job":7}                     cancel what is queued
//   daemon -> worker  {"type":"roofline","measure":true}          measure the empirical roofline
//   daemon -> worker  {"type":"roofline","set":{...}}             judge by this stored one
//   worker -> daemon  {"type":"roofline","roofline":{...}}        what the measurement found
//   worker -> daemon  {"type":"roofline","error":"..."}           ... or why it could not
//   worker -> daemon  {"type":"result","seq":12,"wall_ms":3.1,"result":{...}}
//                     a PointResult row, always the last member so that the daemon can store
//                     its text as sent; wall_ms is the worker's time on the point
//   worker -> daemon  {"type":"result","seq":12,"wall_ms":9.4,"result":[{...},{...}]}
//                     the rows of every variant of a point (a job with variants), in order
//   worker -> daemon  {"type":"failure","seq":12,"error":{"type":..,"message":..}}
//                     with "exiting":true where the worker ends right after it (a compile
//                     stopped at its limit): nothing more is to be sent to it
//   worker -> daemon  {"type":"dropped","seq":13}                 not measured, by request
//
// A worker measures one point at a time and answers every measure request, in order. The
// daemon may send several requests at once and a worker may hold its answers while more
// requests wait and write them together: on many machines waking the other process costs more
// than measuring a mock point. Before each point the worker reads what input is waiting, so a
// drop takes effect after the point being measured. Closing its stdin asks it to exit.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.hpp"
#include "engine/device_info.hpp"
#include "engine/point_result.hpp"

namespace kernelscan::worker_protocol {

class protocol_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Lines the daemon writes (each ends in '\n').
std::string job_line(std::int64_t job_id, std::string_view spec_json);
std::string measure_line(std::uint64_t seq, std::int64_t job_id, std::uint64_t index);
std::string drop_line(std::int64_t job_id);
std::string measure_roofline_line();
std::string set_roofline_line(const measured_roofline& roofline);

// Lines the worker writes.
std::string ready_line(const device_info& device);
std::string result_line(std::uint64_t seq, double wall_ms, const point_result& result);
// The rows of every variant of a point (one row: the line above): "result" is their list, and
// result_text is left empty.
std::string result_line(std::uint64_t seq, double wall_ms,
                        const std::vector<point_result>& results);
std::string failure_line(std::uint64_t seq, std::string_view type, std::string_view message,
                         bool exiting = false);
std::string dropped_line(std::uint64_t seq);
std::string roofline_line(const measured_roofline& roofline);
std::string roofline_failure_line(std::string_view message);

struct daemon_message {
  enum class kind { job, measure, drop, roofline } type = kind::measure;
  std::int64_t job = 0;
  std::uint64_t seq = 0;
  std::uint64_t index = 0;
  json spec;                                      // for kind::job
  std::optional<measured_roofline> set_roofline;  // kind::roofline: set it, or measure if none
};
// Throws protocol_error.
daemon_message parse_daemon_line(std::string_view line);

struct worker_message {
  enum class kind { ready, result, failure, dropped, roofline } type = kind::result;
  std::uint64_t seq = 0;
  device_info device;          // ready
  measured_roofline roofline;  // roofline, unless error_message says why not
  json result;                 // result: the PointResult row
  std::string result_text;     // ... as the worker wrote it
  double wall_ms = 0;
  std::string error_type;     // failure
  std::string error_message;  // failure
  bool exiting = false;       // failure: the worker ends after this line
};
// Throws protocol_error.
worker_message parse_worker_line(std::string_view line);

}  // namespace kernelscan::worker_protocol
