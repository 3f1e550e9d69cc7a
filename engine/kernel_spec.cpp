#include "engine/kernel_spec.hpp"

namespace kernelscan {

std::string_view op_name(const kernel_spec& k) {
  switch (k.index()) {
    case 0:
      return "gemm";
    case 1:
      return "stream";
    default:
      return "custom";
  }
}

std::string_view to_string(layout l) {
  return l == layout::row ? "row" : "col";
}

std::string_view to_string(gemm_impl i) {
  return i == gemm_impl::library ? "library" : "builtin";
}

std::string_view to_string(stream_variant v) {
  switch (v) {
    case stream_variant::copy:
      return "copy";
    case stream_variant::scale:
      return "scale";
    case stream_variant::add:
      return "add";
    case stream_variant::triad:
      return "triad";
  }
  return "?";
}

std::string_view to_string(kernel_language l) {
  switch (l) {
    case kernel_language::cuda:
      return "cuda";
    case kernel_language::opencl:
      return "opencl";
    case kernel_language::hip:
      break;
  }
  return "hip";
}

std::string compile_key(const custom_kernel& k) {
  std::string key = std::string(to_string(k.language)) + '\0' + k.entry + '\0';
  for (const auto& o : k.compile_options)
    key += o + '\0';
  return key + k.source;
}

std::string_view to_string(arg_init i) {
  switch (i) {
    case arg_init::none:
      return "none";
    case arg_init::random:
      return "random";
    case arg_init::zeros:
      return "zeros";
    case arg_init::ones:
      return "ones";
    case arg_init::arange:
      return "arange";
  }
  return "?";
}

}  // namespace kernelscan
