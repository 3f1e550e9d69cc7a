#include "engine/opencl/opencl_errors.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>

namespace kernelscan::opencl {
namespace {

constexpr std::array<std::pair<int, const char*>, 51> k_names{{
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-68, "CL_INVALID_DEVICE_QUEUE"},
}};

bool contains(const std::string& text, const char* word) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return lower.find(word) != std::string::npos;
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool path_char(char c) {
  return !std::isspace(static_cast<unsigned char>(c)) && c != ':' && c != '"' && c != '\'';
}

// Whether `log` says "type '...half' is not allowed" (half, half2, ..., a whole word), as clang
// does where half is a storage type only.
bool names_half_not_allowed(const std::string& log) {
  static constexpr std::string_view tail = "' is not allowed";
  for (auto q = log.find(tail); q != std::string::npos; q = log.find(tail, q + 1)) {
    std::size_t p = q;
    while (p > 0 && std::isdigit(static_cast<unsigned char>(log[p - 1])))
      --p;
    if (p < 4 || log.compare(p - 4, 4, "half") != 0) continue;
    p -= 4;
    if (p > 0 && word_char(log[p - 1])) continue;
    const auto open = log.rfind('\'', p - 1);
    if (open != std::string::npos && open >= 5 && log.compare(open - 5, 5, "type ") == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string cl_status_name(int status) {
  for (const auto& [code, name] : k_names) {
    if (code == status) return std::string(name) + " (" + std::to_string(status) + ")";
  }
  return "OpenCL status " + std::to_string(status);
}

fault_kind classify_cl_status(int status, cl_phase phase) {
  constexpr int mem_object_allocation_failure = -4, out_of_resources = -5, out_of_host_memory = -6;
  constexpr int invalid_command_queue = -36, invalid_context = -34, device_not_available = -2;
  constexpr int exec_status_error = -14, invalid_buffer_size = -61;
  if (status == mem_object_allocation_failure || status == out_of_host_memory) {
    return fault_kind::out_of_memory;
  }
  if (status == invalid_command_queue || status == invalid_context ||
      status == device_not_available || status == exec_status_error) {
    return fault_kind::device_lost;
  }
  switch (phase) {
    case cl_phase::allocate:
      if (status == out_of_resources || status == invalid_buffer_size) {
        return fault_kind::out_of_memory;
      }
      return fault_kind::internal;
    case cl_phase::enqueue:
      // The command's arguments or its work sizes do not fit the kernel or the device.
      if (status == out_of_resources || (status <= -49 && status >= -56) || status == -63) {
        return fault_kind::invalid_launch;
      }
      return fault_kind::internal;
    case cl_phase::wait:
      // A command failed while it ran: a kernel faulted, and nothing queued after it can be
      // trusted.
      return fault_kind::device_lost;
    case cl_phase::other:
      return fault_kind::internal;
  }
  return fault_kind::internal;
}

std::string normalise_vendor(const std::string& v) {
  if (contains(v, "nvidia")) return "NVIDIA";
  if (contains(v, "advanced micro devices") || contains(v, "authenticamd") || v == "AMD") {
    return "AMD";
  }
  if (contains(v, "intel")) return "Intel";
  if (contains(v, "arm")) return "ARM";
  if (contains(v, "apple")) return "Apple";
  if (contains(v, "qualcomm")) return "Qualcomm";
  return v;
}

std::string readable_build_log(const std::string& log) {
  // Scanned by hand, in one pass: std::regex recurses once per character it repeats, and a log
  // line of 200,000 characters (an #error directive's) overflowed the worker's stack.
  std::string out;
  out.reserve(log.size());
  std::size_t copied = 0;  // log[copied..] is not in `out` yet
  for (std::size_t at = 0; at < log.size();) {
    std::size_t end = std::string::npos;
    if (log.compare(at, 9, "tempfile_") == 0) {
      std::size_t e = at + 9;
      while (e < log.size() && word_char(log[e]))
        ++e;
      if (e > at + 9 && log.compare(e, 3, ".cl") == 0 &&
          !(e + 3 < log.size() && word_char(log[e + 3]))) {
        end = e + 3;
      }
    } else if (log.compare(at, 13, "CompileSource") == 0 &&
               !(at + 13 < log.size() && word_char(log[at + 13]))) {
      end = at + 13;
    }
    if (end == std::string::npos) {
      ++at;
      continue;
    }
    // With the directory it is in: the longest run of path characters before it, from its
    // first '/', that ends in '/'.
    std::size_t begin = at;
    if (begin > copied && log[begin - 1] == '/') {
      std::size_t run = begin - 1;
      while (run > copied && path_char(log[run - 1]))
        --run;
      begin = log.find('/', run);
    }
    out.append(log, copied, begin - copied);
    out += "kernel.cl";
    copied = at = end;
  }
  out.append(log, copied, std::string::npos);
  out = bounded_compile_log(out);
  if (out.find("program scope variable must reside in constant address space") !=
      std::string::npos) {
    out +=
        "\nhint: a program-scope variable outside __constant needs OpenCL C 2.0: add "
        "\"-cl-std=CL2.0\" to compile_options (where the device supports it)";
  }
  // Clang's words where half is a storage type only (no cl_khr_fp16): "declaring variable of
  // type '__private half' is not allowed", "casting to type 'half' is not allowed", ...
  if (names_half_not_allowed(out)) {
    out +=
        "\nhint: this device has no cl_khr_fp16 (see its capabilities), so half is a storage "
        "type only: read and write f16 buffers with vload_half/vstore_half and compute in float";
  }
  if (out.find("requires cl_khr_fp64") != std::string::npos) {
    out +=
        "\nhint: this device has no cl_khr_fp64 (see its capabilities): compute in float, or "
        "run the kernel on a device with f64";
  }
  return out;
}

}  // namespace kernelscan::opencl
