#pragma once
// Imports of results measured elsewhere on the wire (POST /api/v1/imports, api/openapi.yaml
// `ImportRequest`): the request envelope and a reader for each source format, strict about the
// envelope and tolerant of what the source tools add, with an error per problem naming the
// field (or the CSV line and column) and the reason. Pure functions; thread-safe.
//
// Formats:
// - rocm_profiler: the results JSON of the ROCm profiling scripts ("seed profiler"): an object
//   with `components` (each with mean_us, std_us, min_us, max_us, p50_us, p95_us, p99_us,
//   bytes_transferred, flops_estimated, type), an optional `full_pipeline` with the same
//   statistics, and an optional free-form `config` (a GPU name and dtype are looked for in it).
// - rocprofv3_kernel_trace: rocprofv3's kernel_trace.csv, one row per dispatch; aggregated per
//   Kernel_Name from End_Timestamp - Start_Timestamp (ns).
// - nsys_cuda_gpu_kern_sum: `nsys stats --report cuda_gpu_kern_sum --format csv`, one row per
//   kernel name with Instances and Avg/Med/Min/Max/StdDev.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_errors.hpp"
#include "api/json.hpp"
#include "engine/imported_kernel.hpp"

namespace kernelscan {

enum class import_format { rocm_profiler, rocprofv3_kernel_trace, nsys_cuda_gpu_kern_sum };
std::string_view to_string(import_format f);
// The sweep parameter that numbers an import's points: "component" or "kernel".
std::string_view point_parameter(import_format f);

struct import_limits {
  std::size_t max_kernels = 100000;  // points per job, as --max-sweep-points
  std::size_t max_labels = 32;
};

// The work of one kernel, given in the request for sources that have none (the CSV formats).
struct kernel_work {
  std::optional<double> flops;
  std::optional<double> bytes;
};

struct import_request {
  import_format format = import_format::rocm_profiler;
  std::string name;
  std::map<std::string, std::string> labels;
  import_target target;     // the device model, its name and the roof dtype
  std::string device_from;  // where the device came from: "request", "config.gpu", ... or ""
  std::string dtype_from;   // "request", "config.dtype" or "default"
  std::map<std::string, kernel_work> work;
  json config;  // rocm_profiler's `config`, kept with the job; null otherwise
  std::vector<imported_kernel> kernels;  // in point order, statistics filled in
};

// Parses and checks a request body; throws validation_error listing every problem found.
import_request parse_import(const json& body, const import_limits& limits);

// The readers of each format's `data`, for parse_import and for tests and fuzzing. Errors name
// fields under "data" ("data.components.hip_topk.p50_us"); CSV errors name the field "data"
// with the line and column in the message. Throw validation_error.
std::vector<imported_kernel> read_rocm_profiler(const json& data);
std::vector<imported_kernel> read_rocprofv3_kernel_trace(std::string_view csv);
std::vector<imported_kernel> read_nsys_cuda_gpu_kern_sum(std::string_view csv);

// The spec an imported job is stored with (api/openapi.yaml `ImportSpec`): name, labels, what
// was imported and against which device, and the sweep of point numbers that the results' CSV
// columns and the dashboard read.
json import_spec_json(const import_request& request);

}  // namespace kernelscan
