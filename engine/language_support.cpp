#include "engine/language_support.hpp"

#include <string_view>
#include <variant>

namespace kernelscan {

std::string device_words(const device_info& d) {
  std::string out = "device " + std::to_string(d.index) + " (" + d.name;
  if (!d.arch.empty()) out += ", " + d.arch;
  return out + ")";
}

namespace {

// The field and language of each user kernel in `k`, the first the device cannot run.
std::optional<std::string> first_unsupported(const kernel_spec& k, const std::string& path,
                                             const device_info& device) {
  const auto* c = std::get_if<custom_spec>(&k);
  if (!c) return std::nullopt;
  if (auto why = unsupported_language(c->kernel.language, device)) {
    return path + ".language: " + *why;
  }
  if (c->reference) {
    if (const auto* ref = std::get_if<custom_kernel>(&*c->reference)) {
      if (auto why = unsupported_language(ref->language, device)) {
        return path + ".reference.language: " + *why;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unsupported_language(kernel_language language,
                                                const device_info& device) {
  if (device.engine == engine_kind::opencl) {
    if (language == kernel_language::opencl) return std::nullopt;
    return "\"" + std::string(to_string(language)) + "\" kernels do not run on " +
           device_words(device) +
           ", an OpenCL device: it builds \"opencl\" kernels (OpenCL C). Submit to a HIP device "
           "(engine \"hip\"), or write the kernel in OpenCL C";
  }
  if (language == kernel_language::opencl) {
    if (device.engine == engine_kind::mock) return std::nullopt;  // any GPU runs OpenCL C
    return "\"opencl\" kernels run on OpenCL devices (engine \"opencl\"); " + device_words(device) +
           " is served by the HIP engine";
  }
  if (language == kernel_language::hip) return std::nullopt;
  // CUDA C++ is compiled by NVRTC: an NVIDIA GPU of the GPU engine.
  if (device.engine == engine_kind::hip && device.vendor == "NVIDIA") return std::nullopt;
  std::string what;
  if (device.engine == engine_kind::mock) {
    what = " is a mock device, which simulates timings and compiles no kernel";
  } else if (device.vendor.empty()) {
    what = " is not an NVIDIA GPU";
  } else {
    const bool vowel = std::string_view("AEIOU").find(device.vendor.front()) != std::string::npos;
    what = std::string(vowel ? " is an " : " is a ") + device.vendor + " GPU";
  }
  return "\"cuda\" (CUDA C++, compiled by NVRTC) runs on NVIDIA GPUs only; " +
         device_words(device) + what +
         ". Submit it to an NVIDIA device, or write the kernel in \"hip\", which runs on AMD and "
         "NVIDIA GPUs";
}

std::optional<std::string> unsupported_language(const job_spec& spec, const device_info& device) {
  for (std::size_t v = 0; v < spec.variants.size(); ++v) {
    const std::string at = "variants[" + std::to_string(v) + "]";
    if (auto why = first_unsupported(spec.variants[v].kernel, at, device)) return why;
  }
  if (auto why = first_unsupported(spec.kernel, "kernel", device)) return why;
  if (spec.fitness.baseline) {
    return first_unsupported(*spec.fitness.baseline, "fitness.baseline", device);
  }
  return std::nullopt;
}

}  // namespace kernelscan
