// libFuzzer target: POST /api/v1/imports' parsing of untrusted input, then the analysis and the
// row codec of what it accepts. The first byte picks the way in, so that the CSV readers see
// arbitrary bytes rather than only what survives JSON escaping:
//   'T' + text: a rocprofv3 kernel trace; 'N' + text: an nsys cuda_gpu_kern_sum report;
//   'R' + text: a rocm_profiler results document; anything else: a whole request body.
// Invariants beyond "no crash": only validation_error escapes, always naming a problem in text
// that can be sent as JSON, and an accepted import has kernels that all have a median and become
// rows.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/import_codec.hpp"
#include "api/json.hpp"
#include "api/result_codec.hpp"

using namespace kernelscan;

namespace {

void check(const std::vector<imported_kernel>& kernels, const import_target& target) {
  if (kernels.empty()) std::abort();  // accepted, so there is something to store
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (!kernels[i].stats.median) std::abort();
    const point_result p =
        imported_point(kernels[i], i, {{"kernel", std::int64_t(i)}}, target, "fuzz");
    (void)to_json(p).dump();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::string_view rest = all.substr(1);
  import_target mi300x;
  mi300x.model = find_device_model("MI300X");
  try {
    switch (all.front()) {
      case 'T':
        check(read_rocprofv3_kernel_trace(rest), mi300x);
        return 0;
      case 'N':
        check(read_nsys_cuda_gpu_kern_sum(rest), mi300x);
        return 0;
      case 'R': {
        json doc;
        try {
          doc = parse_json(rest);
        } catch (const json_syntax_error&) {
          return 0;
        }
        check(read_rocm_profiler(doc), mi300x);
        return 0;
      }
      default: {
        json body;
        try {
          body = parse_json(all);
        } catch (const json_syntax_error&) {
          return 0;
        }
        const import_request req = parse_import(body, {});
        check(req.kernels, req.target);
        (void)import_spec_json(req).dump();
        return 0;
      }
    }
  } catch (const validation_error& e) {
    if (e.errors().empty()) std::abort();  // an error must say what is wrong
    // ... in text the JSON writer accepts (it throws on bad UTF-8): the daemon sends it.
    json details = json::array();
    for (const auto& fe : e.errors())
      details.push_back({{"field", fe.field}, {"message", fe.message}});
    (void)details.dump();
  }
  return 0;
}
