#include "engine/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/metrics.hpp"

namespace kernelscan {
namespace {

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", v);
  return buf;
}

// Milliseconds as people write them: "14000", "1850", "2.5".
std::string ms_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

void add_flag(std::vector<std::string>& flags, const std::string& f) {
  if (std::find(flags.begin(), flags.end(), f) == flags.end()) flags.push_back(f);
}

bool is_custom(const kernel_instance& k) {
  return std::holds_alternative<custom_instance>(k);
}

// The occupancy advice of a kernel too short of warps to hide memory latency: with its
// measured occupancy and what limits it where the platform tells, the general advice otherwise;
// none where half the unit's warps or more are resident.
std::optional<std::string> occupancy_advice(const std::optional<kernel_resources>& k) {
  if (!k || !k->occupancy) {
    return "check occupancy: too few waves in flight cannot hide memory latency; use more, "
           "smaller blocks or fewer registers per thread";
  }
  if (*k->occupancy >= 0.5) return std::nullopt;
  std::string text = "occupancy " + percent(*k->occupancy * 100);
  if (k->blocks_per_unit) text += " (" + std::to_string(*k->blocks_per_unit) + " blocks per unit";
  const auto& limits = k->limited_by;
  const auto limited = [&](const char* what) {
    return std::find(limits.begin(), limits.end(), what) != limits.end();
  };
  if (!limits.empty()) {
    text += ", limited by";
    for (std::size_t i = 0; i < limits.size(); ++i)
      text += (i ? " and " : " ") + limits[i];
  }
  if (k->blocks_per_unit) text += ")";
  text += ": too few warps in flight to hide memory latency; ";
  if (limited("registers")) {
    text += "use fewer registers per thread (" + std::to_string(k->registers.value_or(0)) +
            " now; __launch_bounds__, less live state)";
  } else if (limited("shared_memory")) {
    text += "use less shared memory per block (" + std::to_string(k->shared_bytes.value_or(0)) +
            " bytes now)";
  } else if (limited("blocks")) {
    text += "use blocks of more threads";
  } else {
    text += "use fewer registers or less shared memory per thread, or more blocks";
  }
  return text;
}

}  // namespace

std::vector<std::string> verification_flags(const verification_result& v, dtype out_type) {
  std::vector<std::string> flags;
  if (v.timed_wrong > 0 || v.timed_failed > 0) flags.emplace_back("timed_output_mismatch");
  if (!v.inputs_written.empty()) flags.emplace_back("input_modified");
  if (!v.written_out_of_bounds.empty()) flags.emplace_back("out_of_bounds_write");
  if (uneven_launches(v)) flags.emplace_back("uneven_launches");
  if (v.status != "skipped" && v.ref_near_zero + v.ref_not_finite > k_low_signal_share)
    flags.emplace_back("low_signal_reference");
  // An f32/f64 result whose errors are those of a narrower type's arithmetic: the kernel
  // computed in a lower precision than it claims (a faster, wrong kernel). Decided on the
  // outputs' norm-relative error whether or not they passed, and, where they failed, also on
  // elementwise errors of f16 size.
  const bool wide = out_type == dtype::f32 || out_type == dtype::f64;
  const bool narrow_errors = wide && v.status != "skipped" && std::isfinite(v.norm_rel_err) &&
                             v.norm_rel_err >= narrow_arithmetic_error(out_type) &&
                             v.norm_rel_err <= k_narrow_arithmetic_ceiling && v.unwritten == 0;
  if (v.status != "failed") {
    if (narrow_errors) flags.emplace_back("precision_mismatch");
    return flags;
  }
  flags.emplace_back("verification_failed");
  if (v.unwritten > 0) flags.emplace_back("output_not_written");
  if (narrow_errors || (wide && v.unwritten == 0 && std::isfinite(v.max_rel_err) &&
                        v.max_rel_err <= default_tolerance(dtype::f16))) {
    flags.emplace_back("precision_mismatch");
  }
  return flags;
}

double narrow_arithmetic_error(dtype out_type) {
  // Rounding to f16 alone (11 significant bits) leaves a norm-relative error of about 2.8e-4;
  // f32 arithmetic, even summing 10^5 terms, stays near 1e-5. For f64, f32 arithmetic (24 bits)
  // leaves about 3e-8; f64 arithmetic stays below 1e-12.
  return out_type == dtype::f64 ? 1e-9 : 1e-4;
}

std::vector<std::string> advise(const point_metrics& m, const kernel_instance& k, l2_mode l2,
                                const std::optional<kernel_resources>& resources, bool cpu) {
  std::vector<std::string> out;
  const double pct = m.roof_pct;
  if (m.bound == "latency") {
    out.emplace_back(cpu ? "latency-bound: the work takes less time than a kernel launch; fuse "
                           "it with its neighbours, or batch small problems into one launch"
                         : "latency-bound: the work takes less time than a kernel launch; fuse "
                           "it with its neighbours, batch small problems into one launch, or use "
                           "a persistent kernel or a graph of launches");
  } else if (m.bound == "memory") {
    if (pct < 60 && cpu) {
      // A CPU driver runs a work-group's work-items as a loop on one core: SIMD comes from
      // that loop (or from vector types), and the cores from the work-groups.
      out.emplace_back("memory-bound at " + percent(pct) +
                       " of bandwidth: vectorise (each work-item a run of neighbouring "
                       "elements, or vector types such as float8, so that its loop compiles to "
                       "SIMD loads and stores), and give every core work-groups of its own");
    } else if (pct < 60) {
      out.emplace_back("memory-bound at " + percent(pct) +
                       " of bandwidth: coalesce accesses (adjacent threads, adjacent "
                       "addresses) and vectorise loads and stores to 128 bits");
      if (auto text = occupancy_advice(resources)) out.push_back(std::move(*text));
    } else {
      // Over the ceiling (within the allowance faster_than_roofline gives it): say what that
      // means rather than let the figure read as a kernel beyond the hardware.
      const std::string above =
          pct > 100 ? ", above that ceiling (part of the traffic came from the caches, or the "
                      "ceiling was measured while the device ran slower: kernelscan roofline "
                      "measures it again)"
                    : "";
      out.emplace_back("memory-bound at " + percent(pct) + " of bandwidth" + above +
                       ": only less traffic helps now; fuse with the kernels that produce or "
                       "consume this data, or store it in a narrower type");
    }
    if (m.arithmetic_intensity > 0 && is_custom(k)) {
      out.emplace_back(cpu ? "reuse data while the core's caches and registers hold it (block "
                             "the loops; __local memory is ordinary cached memory on a CPU) to "
                             "raise arithmetic intensity"
                           : "reuse data through LDS/shared memory or registers to raise "
                             "arithmetic intensity");
    }
  } else if (m.bound == "compute") {
    const auto* g = std::get_if<gemm_instance>(&k);
    const dtype t = roof_dtype(k);
    const bool matrix_type = t == dtype::f16 || t == dtype::bf16 || t == dtype::i8;
    if (g && g->impl == gemm_impl::builtin && pct < 70) {
      out.emplace_back("compute-bound at " + percent(pct) +
                       " of peak: the library GEMM (impl: library) is the bar to beat");
    }
    if (pct < 70 && cpu) {
      out.emplace_back("compute-bound at " + percent(pct) +
                       " of peak: vectorise the inner loops (SIMD), keep several independent "
                       "accumulations in flight, block the loops for the caches, and give every "
                       "core work-groups of its own");
    } else if (pct < 50 && matrix_type) {
      out.emplace_back("compute-bound at " + percent(pct) +
                       " of the matrix-core peak: use matrix cores (MFMA/WMMA on AMD, "
                       "tensor cores/WGMMA on NVIDIA)");
    } else if (pct < 70) {
      out.emplace_back("compute-bound at " + percent(pct) +
                       " of peak: tile for register and LDS reuse, unroll inner loops, and "
                       "keep enough waves per compute unit to hide latency");
    } else {
      out.emplace_back("compute-bound at " + percent(pct) +
                       " of peak: near the roof; only fewer operations (a better algorithm) or "
                       "a lower precision will go much faster");
    }
  }
  if (resources && resources->local_bytes.value_or(0) > 0) {
    out.emplace_back("the kernel keeps " + std::to_string(*resources->local_bytes) +
                     " bytes per thread in local memory (spilled registers, or private arrays "
                     "indexed at run time), which is device memory behind the caches: index "
                     "arrays with constants, keep less state live, or allow more registers");
  }
  if (l2 == l2_mode::hot) {
    out.emplace_back(
        "measured with warm caches (l2: hot): a real pipeline may see cold-cache times");
  }
  if (const auto* c = std::get_if<custom_instance>(&k); c && !c->flops) {
    out.emplace_back(
        "declare kernel.flops (and kernel.bytes) so that the roofline places this kernel by "
        "its real work");
  }
  return out;
}

namespace {

// Whether the point's median is more than the allowance below its physical floor: by the
// ceilings `roof`, and where those are measured, by the vector f32 peak measured again where
// its work alone puts the floor that high (analysis_context::vector_peak_again), and by the
// bandwidth measured again over the point's own working set where its bytes do
// (analysis_context::bandwidth_at). A ceiling measured again higher than `roof`'s replaces it in
// `judged` (which starts as `roof`), and `note` reports it.
bool beats_roofline(const point_result& r, const kernel_instance& k, const device_peaks& roof,
                    bool from_dram, const analysis_context& ctx, device_peaks& judged,
                    std::string& note) {
  const double median = r.time_us->median;
  const double flops = r.metrics->flops, bytes = r.metrics->bytes;
  const double under = 1 - ctx.roofline_allowance;
  const dtype t = roof_dtype(k);
  const auto beaten = [&](const device_peaks& peaks, bool dram) {
    return median < physical_floor_us(flops, bytes, t, peaks, dram) * under;
  };
  if (!(physical_floor_us(flops, bytes, t, roof, from_dram) > 0) || !beaten(roof, from_dram)) {
    return false;
  }
  if (!ctx.measured) return true;
  char line[256];
  if (beaten(judged, false)) {
    // Its work alone puts the floor above the median: no bandwidth would clear it.
    const double again = ctx.vector_peak_again ? ctx.vector_peak_again() : 0;
    if (!(again > judged.vector_f32_tflops)) return true;
    judged.vector_f32_tflops = again;
    if (beaten(judged, false)) return true;
    std::snprintf(line, sizeof line,
                  "faster than the measured compute ceiling (%.3g TFLOP/s): the FMA kernel, "
                  "measured again, reached %.3g TFLOP/s, the ceiling this point is judged by",
                  roof.tflops_for(t), again);
    note = line;
    if (!beaten(judged, from_dram)) return false;
  }
  if (!ctx.bandwidth_at || !from_dram || !(bytes > 0)) return true;
  const double again = ctx.bandwidth_at(bytes);
  if (!(again > judged.bandwidth_gbps)) return true;
  judged.bandwidth_gbps = again;
  std::snprintf(line, sizeof line,
                "faster than the measured bandwidth ceiling (%.1f GB/s): a cold STREAM triad "
                "over this working set, measured again, reached %.1f GB/s, the ceiling this "
                "point is judged by",
                roof.bandwidth_gbps, again);
  note += std::string(note.empty() ? "" : "; ") + line;
  return beaten(judged, true);
}

}  // namespace

std::optional<std::string> sampling_advice(const point_result& r, const timing_options& t) {
  if (r.samples == 0 || r.samples >= k_ci95_min_samples) return std::nullopt;
  const std::string got = std::to_string(r.samples) + (r.samples == 1 ? " sample" : " samples");
  const std::string too_few = ", too few for a 95% interval of the median (it takes " +
                              std::to_string(k_ci95_min_samples) + ")";
  if (r.stop_reason == "max_samples") {
    return "timing.max_samples " + std::to_string(t.max_samples) + " stopped it at " + got +
           too_few + ": give it " + std::to_string(k_ci95_min_samples) + " or more";
  }
  if (r.stop_reason != "max_time") return std::nullopt;
  // A fifth more than six samples' time, in whole seconds.
  const double per_sample_ms = r.sampling_ms / double(r.samples + r.discarded);
  const double wanted_ms =
      std::ceil(per_sample_ms * double(k_ci95_min_samples) * 1.2 / 1000.0) * 1000.0;
  return "only " + got + " within timing.max_time_ms (" + ms_text(t.max_time_ms) + " ms)" +
         too_few + ": at about " + ms_text(per_sample_ms) + " ms a sample, a max_time_ms of " +
         ms_text(wanted_ms) + " takes them";
}

void analyse_point(point_result& r, const kernel_instance& k, const job_spec& spec,
                   const analysis_context& ctx, const std::optional<speedup_estimate>& speedup) {
  if (r.status == point_status::ok && r.time_us) {
    const double median = r.time_us->median;
    const device_peaks& roof = ctx.ceilings();
    const char* source = ctx.measured ? "measured" : "datasheet";
    r.metrics = compute_metrics(k, median, roof, ctx.launch_latency_us, source);

    for (const auto& f : verification_flags(r.verification, roof_dtype(k)))
      add_flag(r.flags, f);
    // Bytes bound the time only when they must come from DRAM: cold caches, or a working set
    // larger than the caches.
    const bool from_dram = r.l2 == l2_mode::cold || r.metrics->bytes > double(ctx.cache_bytes);
    std::string ceiling_note;
    device_peaks judged = roof;
    if (beats_roofline(r, k, roof, from_dram, ctx, judged, ceiling_note)) {
      add_flag(r.flags, "faster_than_roofline");
    }
    // Placed against the ceilings that judged it: a point over a stored bandwidth that a triad
    // over its own working set reaches was not at 134% of what the device can do.
    if (!ceiling_note.empty()) {
      r.metrics = compute_metrics(k, median, judged, ctx.launch_latency_us, "measured_again");
    }
    if (speedup && speedup->speedup > k_excessive_speedup) add_flag(r.flags, "excessive_speedup");
    // Batched, or long enough and read from the memory verification's launches read from
    // (analysis.hpp).
    if (const auto& verified_us = r.verification.launch_us; verified_us) {
      const bool comparable =
          r.batch > 1 || (*verified_us >= k_verification_launch_min_us && from_dram);
      if (comparable && median < *verified_us * k_faster_than_verification) {
        add_flag(r.flags, "faster_than_verification");
      }
    }
    r.advice = advise(*r.metrics, k, r.l2, r.resources, ctx.cpu);
    if (!ceiling_note.empty()) r.advice.push_back(std::move(ceiling_note));
    // First: what the figures above it are worth.
    if (auto text = sampling_advice(r, spec.timing)) r.advice.insert(r.advice.begin(), *text);
  }
  r.fitness = score_point(r, spec.fitness, speedup);
}

}  // namespace kernelscan
