#include "engine/device_needs.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/language_support.hpp"

namespace kernelscan {
namespace {

// Bit 0: f64 arithmetic. Then one bit per GEMM element type, library first, builtin after.
constexpr need_bits k_fp64 = 1;
constexpr std::array k_gemm_types{dtype::f64, dtype::f32, dtype::f16, dtype::bf16};
constexpr int k_library_shift = 1;
constexpr int k_builtin_shift = k_library_shift + int(k_gemm_types.size());

need_bits gemm_bit(gemm_impl impl, dtype t) {
  const auto at = std::find(k_gemm_types.begin(), k_gemm_types.end(), t);
  if (at == k_gemm_types.end()) return 0;  // the spec admits none other
  const int shift = impl == gemm_impl::library ? k_library_shift : k_builtin_shift;
  return need_bits(1) << (shift + int(at - k_gemm_types.begin()));
}

struct need {
  std::string field;  // "kernel.dtype", "variants[1].dtype", "kernel.args[2].dtype"
  need_bits bit = 0;
  dtype type = dtype::f32;
  gemm_impl impl = gemm_impl::library;  // for a GEMM's bit
  bool gemm = false;
  std::string variant = {};  // the variant whose kernel needs it; empty: none
};

void gemm_needs(const gemm_spec& g, const std::string& path, bool timed, std::vector<need>& out) {
  if (g.type == dtype::f64) out.push_back({path + ".dtype", k_fp64, g.type});
  // A GEMM that is a custom kernel's reference falls back to the engine's own where the library
  // lacks its type (point_kernel.cpp): only a timed one needs the implementation it names.
  if (timed) out.push_back({path + ".dtype", gemm_bit(g.impl, g.type), g.type, g.impl, true});
}

void kernel_needs(const kernel_spec& k, const std::string& path, std::vector<need>& out) {
  if (const auto* g = std::get_if<gemm_spec>(&k)) return gemm_needs(*g, path, true, out);
  if (const auto* s = std::get_if<stream_spec>(&k)) {
    if (s->type == dtype::f64) out.push_back({path + ".dtype", k_fp64, s->type});
    return;
  }
  const auto& c = std::get<custom_spec>(k);
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    const kernel_arg& a = c.args[i];
    // Its fill (random, arange) runs on the device in the argument's type.
    if (a.pointer && !a.local && a.type == dtype::f64) {
      out.push_back({path + ".args[" + std::to_string(i) + "].dtype", k_fp64, a.type});
    }
  }
  if (!c.reference) return;
  const std::string ref = path + ".reference";
  if (const auto* g = std::get_if<gemm_spec>(&*c.reference)) gemm_needs(*g, ref, false, out);
  if (const auto* s = std::get_if<stream_spec>(&*c.reference); s && s->type == dtype::f64) {
    out.push_back({ref + ".dtype", k_fp64, s->type});
  }
}

std::vector<need> needs_of(const job_spec& spec) {
  std::vector<need> out;
  for (std::size_t v = 0; v < spec.variants.size(); ++v) {
    const std::size_t first = out.size();
    kernel_needs(spec.variants[v].kernel, "variants[" + std::to_string(v) + "]", out);
    // A variant takes what it does not change from the kernel: its name says which it is.
    for (std::size_t i = first; i < out.size(); ++i)
      out[i].variant = spec.variants[v].name;
  }
  kernel_needs(spec.kernel, "kernel", out);
  if (spec.fitness.baseline) kernel_needs(*spec.fitness.baseline, "fitness.baseline", out);
  return out;
}

bool has(const std::vector<dtype>& types, dtype t) {
  return std::find(types.begin(), types.end(), t) != types.end();
}

std::string reason(const need& n, const device_info& d) {
  const std::string type(to_string(n.type));
  const std::string on = " on " + device_words(d);
  const std::string who = n.variant.empty() ? "" : "variant \"" + n.variant + "\": ";
  if (n.bit == k_fp64) {
    return who + "f64 does not run" + on + ": it has no double-precision arithmetic" +
           (d.engine == engine_kind::opencl ? " (no cl_khr_fp64)" : "") + ". Use f32";
  }
  const device_capabilities& c = d.capabilities;
  std::string out = who + (type.front() == 'f' ? "an " : "a ") + type + " GEMM with impl \"" +
                    std::string(to_string(n.impl)) + "\" does not run" + on + ": ";
  if (n.impl == gemm_impl::library) {
    if (c.gemm_library.empty()) {
      out += "its engine has no GEMM library in this build";
    } else {
      out += c.gemm_library + " there has no " + type + " GEMM";
      if (n.type == dtype::f16 && d.engine == engine_kind::opencl && !c.fp16) {
        out += " (the device lacks cl_khr_fp16)";
      }
    }
    if (has(c.gemm_builtin_types, n.type)) return out + ". Use impl \"builtin\"";
  } else {
    out += "its built-in GEMM has no " + type;
  }
  std::string others;
  for (dtype t : n.impl == gemm_impl::library ? c.gemm_library_types : c.gemm_builtin_types)
    others += (others.empty() ? "" : ", ") + std::string(to_string(t));
  return out + (others.empty() ? "" : " (it has " + others + ")");
}

}  // namespace

need_bits job_needs(const job_spec& spec) {
  need_bits bits = 0;
  for (const need& n : needs_of(spec))
    bits |= n.bit;
  return bits;
}

need_bits device_lacks(const device_capabilities& c) {
  need_bits lacks = c.fp64 ? 0 : k_fp64;
  for (dtype t : k_gemm_types) {
    if (!has(c.gemm_library_types, t)) lacks |= gemm_bit(gemm_impl::library, t);
    if (!has(c.gemm_builtin_types, t)) lacks |= gemm_bit(gemm_impl::builtin, t);
  }
  return lacks;
}

std::optional<std::string> unmet_need(const job_spec& spec, const device_info& device) {
  const need_bits lacks = device_lacks(device.capabilities);
  for (const need& n : needs_of(spec)) {
    if (n.bit & lacks) return n.field + ": " + reason(n, device);
  }
  return std::nullopt;
}

}  // namespace kernelscan
