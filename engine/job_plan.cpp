#include "engine/job_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>

#include "engine/detail/overloaded.hpp"
#include "engine/expression.hpp"

namespace kernelscan {
namespace {

using detail::overloaded;

struct compiled_int {
  std::string field;
  std::string text;
  std::optional<std::int64_t> literal;
  std::optional<expression> expr;
};

struct compiled_num {
  std::string field;
  std::string text;
  std::optional<double> literal;
  std::optional<expression> expr;
};

struct compiled_gemm {
  compiled_int m, n, k;
};
struct compiled_stream {
  compiled_int n;
};
struct compiled_launch {
  std::array<compiled_int, 3> block, grid;
  compiled_int shared;
  // -DNAME=PARAMETER compile options: (index of the option, index of the sweep parameter).
  std::vector<std::pair<std::size_t, std::size_t>> substitutions;
};
struct compiled_arg {
  std::optional<compiled_int> count;
  std::optional<compiled_num> value;
};
struct compiled_custom {
  compiled_launch launch;
  std::vector<compiled_arg> args;
  std::optional<compiled_num> flops, bytes;
  std::variant<std::monostate, compiled_gemm, compiled_stream, compiled_launch> reference;
};
using compiled_kernel = std::variant<compiled_gemm, compiled_stream, compiled_custom>;

// Byte counts as people read limits: "80 GiB", "1.5 MiB", "512 bytes".
std::string format_bytes(double v) {
  static constexpr std::array<const char*, 4> k_units{"KiB", "MiB", "GiB", "TiB"};
  if (v < 1024) return std::to_string(std::int64_t(v)) + " bytes";
  double x = v / 1024;
  std::size_t unit = 0;
  while (x >= 1024 && unit + 1 < k_units.size()) {
    x /= 1024;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s", x, k_units[unit]);
  return buf;
}

// Distinct sets of substituted compile options a plan keeps: each is compiled separately.
constexpr std::size_t k_max_option_variants = 64;
// A plan's points times the characters of its expressions, at most: checking every field at
// every point then takes a thread a second or two at worst.
constexpr double k_max_expression_work = 1e9;

std::string format_number(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::nearbyint(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  return buf;
}

}  // namespace

namespace {

std::string describe_problems(const std::vector<plan_error::problem>& problems) {
  std::string out;
  for (const auto& p : problems)
    out += (out.empty() ? "" : "; ") + p.field + ": " + p.reason;
  return out;
}

}  // namespace

plan_error::plan_error(std::string field, std::string reason)
    : plan_error(std::vector<problem>{{std::move(field), std::move(reason)}}) {}

plan_error::plan_error(std::vector<problem> problems)
    : std::runtime_error(describe_problems(problems)), m_problems(std::move(problems)) {}

struct job_plan::impl {
  job_spec spec;
  plan_limits limits;
  std::vector<std::string> names;
  compiled_kernel kernel;
  std::optional<compiled_kernel> baseline;
  std::vector<compiled_kernel> variants_compiled;  // one per spec.variants, in order
  mutable std::vector<double> values;              // the current point's parameters
  mutable std::uint64_t current = UINT64_MAX;
  // Expressions that did not compile; the constructor throws them all.
  mutable std::vector<plan_error::problem> compile_problems;
  // While validate_all() runs: every field that fails at some point, instead of a throw.
  mutable std::vector<plan_error::problem>* collecting = nullptr;
  mutable std::size_t point_problems = 0;  // recorded for the point being resolved
  // Custom kernels with sweep parameters substituted into their compile options, by the
  // original's address and the options.
  mutable std::map<std::string, std::unique_ptr<custom_kernel>> variants;
  // The characters of every expression compiled: what checking one point costs, about.
  mutable std::uint64_t expression_chars = 0;

  compiled_int compile(const int_expr& e, std::string field) const {
    compiled_int c{std::move(field), e.text, e.literal, std::nullopt};
    if (!c.literal) {
      expression_chars += e.text.size();
      try {
        c.expr.emplace(e.text, names);
      } catch (const expression_error& x) {
        compile_problems.push_back({c.field, x.what()});
      }
    }
    return c;
  }

  compiled_num compile(const num_expr& e, std::string field) const {
    compiled_num c{std::move(field), e.text, e.literal, std::nullopt};
    if (!c.literal) {
      expression_chars += e.text.size();
      try {
        c.expr.emplace(e.text, names);
      } catch (const expression_error& x) {
        compile_problems.push_back({c.field, x.what()});
      }
    }
    return c;
  }

  compiled_gemm compile(const gemm_spec& g, const std::string& at) const {
    return {compile(g.m, at + ".m"), compile(g.n, at + ".n"), compile(g.k, at + ".k")};
  }

  compiled_launch compile(const custom_kernel& k, const std::string& at) const {
    compiled_launch l;
    for (int i = 0; i < 3; ++i) {
      l.block[i] = compile(k.block[i], at + ".block[" + std::to_string(i) + "]");
      l.grid[i] = compile(k.grid[i], at + ".grid[" + std::to_string(i) + "]");
    }
    l.shared = compile(k.shared_bytes, at + ".shared_bytes");
    for (std::size_t i = 0; i < k.compile_options.size(); ++i) {
      const std::string& o = k.compile_options[i];
      const auto eq = o.find('=');
      if (o.rfind("-D", 0) != 0 || eq == std::string::npos) continue;
      const auto it = std::find(names.begin(), names.end(), o.substr(eq + 1));
      if (it != names.end()) l.substitutions.emplace_back(i, std::size_t(it - names.begin()));
    }
    return l;
  }

  compiled_kernel compile_kernel(const kernel_spec& spec_kernel, const std::string& at) const {
    compiled_kernel out;
    std::visit(
        overloaded{
            [&](const gemm_spec& g) { out = compile(g, at); },
            [&](const stream_spec& s) { out = compiled_stream{compile(s.n, at + ".n")}; },
            [&](const custom_spec& s) {
              compiled_custom c;
              c.launch = compile(s.kernel, at);
              for (std::size_t i = 0; i < s.args.size(); ++i) {
                const auto& a = s.args[i];
                const std::string arg_at = at + ".args[" + std::to_string(i) + "]";
                compiled_arg ca;
                if (a.pointer) {
                  ca.count = compile(a.count, arg_at + ".count");
                } else {
                  ca.value = compile(a.value, arg_at + ".value");
                }
                c.args.push_back(std::move(ca));
              }
              if (s.flops) c.flops = compile(*s.flops, at + ".flops");
              if (s.bytes) c.bytes = compile(*s.bytes, at + ".bytes");
              if (s.reference) {
                std::visit(
                    overloaded{
                        [&](const gemm_spec& g) { c.reference = compile(g, at + ".reference"); },
                        [&](const stream_spec& st) {
                          c.reference = compiled_stream{compile(st.n, at + ".reference.n")};
                        },
                        [&](const custom_kernel& k) {
                          c.reference = compile(k, at + ".reference");
                        },
                    },
                    *s.reference);
              }
              out = std::move(c);
            },
        },
        spec_kernel);
    return out;
  }

  void load(std::uint64_t index) const {
    if (current == index) return;
    spec.sweep.point_values(index, values);
    current = index;
  }

  std::string describe(std::uint64_t index) const {
    std::string out = "point " + std::to_string(index);
    if (names.empty()) return out;
    out += " (";
    const auto vals = spec.sweep.point(index);
    for (std::size_t i = 0; i < names.size(); ++i) {
      out += (i ? ", " : "") + names[i] + "=" + std::to_string(vals[i]);
    }
    return out + ")";
  }

  // Throws the problem, or while collecting records it (once per field) and returns: the
  // caller then goes on with a fallback value and the point's checks that combine fields are
  // skipped, so that one bad field does not cause others to be reported.
  void report(const std::string& field, const std::string& reason) const {
    if (!collecting) throw plan_error(field, reason);
    ++point_problems;
    const bool known = std::any_of(collecting->begin(), collecting->end(),
                                   [&](const plan_error::problem& p) { return p.field == field; });
    if (!known) collecting->push_back({field, reason});
  }

  void fail(const std::string& field, const std::string& reason, std::uint64_t index) const {
    report(field, reason + " at " + describe(index));
  }

  std::optional<std::int64_t> eval(const compiled_int& c, std::uint64_t index) const {
    if (c.literal) return *c.literal;
    try {
      return c.expr->evaluate_integer(values);
    } catch (const expression_error& x) {
      fail(c.field, x.what(), index);
      return std::nullopt;
    }
  }

  double eval(const compiled_num& c, std::uint64_t index) const {
    if (c.literal) return *c.literal;
    try {
      return c.expr->evaluate(values);
    } catch (const expression_error& x) {
      fail(c.field, x.what(), index);
      return 0;
    }
  }

  // Evaluates and checks lo <= value <= hi; `lo` when it fails while collecting.
  std::int64_t eval_in(const compiled_int& c, std::int64_t lo, std::int64_t hi,
                       std::uint64_t index) const {
    const auto v = eval(c, index);
    if (!v) return lo;
    if (*v < lo || *v > hi) {
      const std::string shown =
          c.literal ? std::to_string(*v) : "\"" + c.text + "\" is " + std::to_string(*v);
      const std::string bound =
          *v < lo ? "at least " + std::to_string(lo) : "at most " + std::to_string(hi);
      if (c.literal) {
        report(c.field, "is " + shown + "; must be " + bound);
      } else {
        fail(c.field, shown + "; must be " + bound, index);
      }
      return lo;
    }
    return *v;
  }

  void check_bytes(const std::string& field, double bytes, std::uint64_t index) const {
    if (point_problems > 0) return;
    if (bytes > double(limits.max_point_bytes)) {
      fail(field,
           "needs " + format_bytes(bytes) + " of device memory (" + format_number(bytes) +
               " bytes), more than the limit of " + format_bytes(double(limits.max_point_bytes)),
           index);
    }
  }

  // The kernel `k` with the sweep parameters of point `index` substituted into its compile
  // options, or `k` itself when it has none to substitute.
  const custom_kernel* with_options(const compiled_launch& c, const custom_kernel& k,
                                    std::uint64_t index) const {
    if (c.substitutions.empty()) return &k;
    std::vector<std::string> options = k.compile_options;
    for (const auto& [option, parameter] : c.substitutions) {
      const std::string& o = options[option];
      options[option] = o.substr(0, o.find('=') + 1) + format_number(values[parameter]);
    }
    std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(&k));
    for (const auto& o : options)
      key += '\0' + o;
    if (auto it = variants.find(key); it != variants.end()) return it->second.get();
    if (variants.size() >= k_max_option_variants) {
      const std::string field = c.shared.field.substr(0, c.shared.field.rfind('.'));
      fail(field + ".compile_options",
           "take more than " + std::to_string(k_max_option_variants) +
               " different values over the sweep; each is a separate compilation",
           index);
      return &k;
    }
    auto variant = std::make_unique<custom_kernel>(k);
    variant->compile_options = std::move(options);
    return variants.emplace(std::move(key), std::move(variant)).first->second.get();
  }

  gemm_instance resolve(const compiled_gemm& c, const gemm_spec& g, std::uint64_t index) const {
    gemm_instance out;
    out.m = eval_in(c.m, 1, limits.max_dimension, index);
    out.n = eval_in(c.n, 1, limits.max_dimension, index);
    out.k = eval_in(c.k, 1, limits.max_dimension, index);
    out.type = g.type;
    out.layout_a = g.layout_a;
    out.layout_b = g.layout_b;
    out.alpha = g.alpha;
    out.beta = g.beta;
    out.impl = g.impl;
    out.bind_a = g.bind_a;
    out.bind_b = g.bind_b;
    out.bind_c = g.bind_c;
    return out;
  }

  stream_instance resolve(const compiled_stream& c, const stream_spec& s,
                          std::uint64_t index) const {
    stream_instance out;
    out.variant = s.variant;
    out.n = eval_in(c.n, 1, limits.max_dimension, index);
    out.type = s.type;
    out.scalar = s.scalar;
    out.bind_a = s.bind_a;
    out.bind_b = s.bind_b;
    out.bind_c = s.bind_c;
    return out;
  }

  custom_launch resolve(const compiled_launch& c, const custom_kernel& k,
                        std::uint64_t index) const {
    custom_launch out;
    out.kernel = with_options(c, k, index);
    static constexpr std::array<std::int64_t, 3> k_grid_max{2147483647, 65535, 65535};
    const std::size_t problems_before = point_problems;
    for (int i = 0; i < 3; ++i) {
      out.block[i] = eval_in(c.block[i], 1, limits.max_threads_per_block, index);
      out.grid[i] = eval_in(c.grid[i], 1, k_grid_max[i], index);
    }
    const std::int64_t threads = out.block[0] * out.block[1] * out.block[2];
    if (point_problems == problems_before && threads > limits.max_threads_per_block) {
      fail(c.block[0].field.substr(0, c.block[0].field.size() - 3),
           "has " + std::to_string(threads) + " threads per block; the limit is " +
               std::to_string(limits.max_threads_per_block),
           index);
    }
    out.shared_bytes = eval_in(c.shared, 0, limits.max_shared_bytes, index);
    return out;
  }

  // A built-in reference reads and writes the custom kernel's buffers: they must be big enough.
  void check_binding(const custom_instance& k, const std::string& field, const std::string& arg,
                     double needed, const char* what, std::uint64_t index) const {
    if (point_problems > 0) return;
    for (const auto& a : k.args) {
      if (a.name != arg) continue;
      if (double(a.count) < needed) {
        fail(field,
             std::string(what) + " needs " + format_number(needed) + " elements but argument \"" +
                 arg + "\" has count " + std::to_string(a.count),
             index);
      }
      return;
    }
  }

  kernel_instance resolve_kernel(const compiled_kernel& compiled, const kernel_spec& spec_kernel,
                                 const std::string& at, std::uint64_t index) const {
    load(index);
    kernel_instance out;
    std::visit(overloaded{
                   [&](const compiled_gemm& c) {
                     out = resolve(c, std::get<gemm_spec>(spec_kernel), index);
                   },
                   [&](const compiled_stream& c) {
                     out = resolve(c, std::get<stream_spec>(spec_kernel), index);
                   },
                   [&](const compiled_custom& c) {
                     out = resolve(c, std::get<custom_spec>(spec_kernel), at, index);
                   },
               },
               compiled);
    check_bytes(out.index() == 2 ? at + ".args" : at, footprint_bytes(out), index);
    return out;
  }

  custom_instance resolve(const compiled_custom& c, const custom_spec& s, const std::string& at,
                          std::uint64_t index) const {
    custom_instance out;
    out.launch = resolve(c.launch, s.kernel, index);
    for (std::size_t i = 0; i < s.args.size(); ++i) {
      const auto& a = s.args[i];
      arg_instance r{a.name, a.type, a.pointer, 0, a.init, a.output, 0, a.local, a.scratch};
      if (a.pointer) {
        r.count = eval_in(*c.args[i].count, 1, limits.max_dimension, index);
      } else {
        r.value = eval(*c.args[i].value, index);
        if (!is_floating(a.type)) {
          const auto& field = c.args[i].value->field;
          if (r.value != std::nearbyint(r.value)) {
            fail(field, "is " + format_number(r.value) + ", not an integer", index);
          }
          const double lo = a.type == dtype::i64   ? -9.2e18
                            : a.type == dtype::i32 ? -2147483648.0
                            : a.type == dtype::i8  ? -128.0
                                                   : 0.0;
          const double hi = a.type == dtype::i64   ? 9.2e18
                            : a.type == dtype::i32 ? 2147483647.0
                            : a.type == dtype::i8  ? 127.0
                            : a.type == dtype::u8  ? 255.0
                                                   : 4294967295.0;
          if (r.value < lo || r.value > hi) {
            fail(field,
                 "is " + format_number(r.value) + ", out of range for " +
                     std::string(to_string(a.type)),
                 index);
          }
        } else {
          // The largest finite value of each floating type: beyond it the kernel would get
          // infinity where the spec says a number.
          const double most = a.type == dtype::f64    ? std::numeric_limits<double>::max()
                              : a.type == dtype::f32  ? double(std::numeric_limits<float>::max())
                              : a.type == dtype::bf16 ? 3.3895313892515355e38
                                                      : 65504.0;
          if (std::fabs(r.value) > most) {
            fail(c.args[i].value->field,
                 "is " + format_number(r.value) + ", beyond the largest " +
                     std::string(to_string(a.type)) + " (" + format_number(most) + ")",
                 index);
          }
        }
      }
      out.args.push_back(std::move(r));
    }
    if (c.flops) {
      out.flops = eval(*c.flops, index);
      if (*out.flops < 0) fail(c.flops->field, "is negative", index);
    }
    if (c.bytes) {
      out.bytes = eval(*c.bytes, index);
      if (*out.bytes < 0) fail(c.bytes->field, "is negative", index);
    }
    std::visit(overloaded{
                   [](std::monostate) {},
                   [&](const compiled_gemm& g) {
                     const auto& spec_ref = std::get<gemm_spec>(*s.reference);
                     auto r = resolve(g, spec_ref, index);
                     const double m = double(r.m), n = double(r.n), k = double(r.k);
                     const std::string ref_at = at + ".reference";
                     check_binding(out, ref_at, r.bind_a, m * k, "gemm A (m*k)", index);
                     check_binding(out, ref_at, r.bind_b, k * n, "gemm B (k*n)", index);
                     check_binding(out, ref_at, r.bind_c, m * n, "gemm C (m*n)", index);
                     out.reference = std::move(r);
                   },
                   [&](const compiled_stream& st) {
                     const auto& spec_ref = std::get<stream_spec>(*s.reference);
                     auto r = resolve(st, spec_ref, index);
                     for (const auto* bind : {&r.bind_a, &r.bind_b, &r.bind_c}) {
                       if (!bind->empty()) {
                         check_binding(out, at + ".reference", *bind, double(r.n), "stream n",
                                       index);
                       }
                     }
                     out.reference = std::move(r);
                   },
                   [&](const compiled_launch& l) {
                     out.reference = resolve(l, std::get<custom_kernel>(*s.reference), index);
                   },
               },
               c.reference);
    return out;
  }
};

job_plan::job_plan(job_spec spec, plan_limits limits) : m_impl(std::make_unique<impl>()) {
  auto& p = *m_impl;
  p.spec = std::move(spec);
  p.limits = limits;
  p.names = p.spec.sweep.names();
  if (p.spec.variants.empty()) {
    p.kernel = p.compile_kernel(p.spec.kernel, "kernel");
  } else {
    for (std::size_t v = 0; v < p.spec.variants.size(); ++v) {
      p.variants_compiled.push_back(
          p.compile_kernel(p.spec.variants[v].kernel, "variants[" + std::to_string(v) + "]"));
    }
    p.kernel = p.variants_compiled.front();
  }
  if (p.spec.fitness.baseline) {
    p.baseline = p.compile_kernel(*p.spec.fitness.baseline, "fitness.baseline");
  }
  if (!p.compile_problems.empty()) throw plan_error(std::move(p.compile_problems));
}

job_plan::job_plan(job_plan&&) noexcept = default;
job_plan& job_plan::operator=(job_plan&&) noexcept = default;
job_plan::~job_plan() = default;

const job_spec& job_plan::spec() const {
  return m_impl->spec;
}

std::uint64_t job_plan::size() const {
  return m_impl->spec.sweep.size();
}

kernel_instance job_plan::resolve(std::uint64_t index) const {
  if (!m_impl->spec.variants.empty()) return resolve_variant(0, index);
  return m_impl->resolve_kernel(m_impl->kernel, m_impl->spec.kernel, "kernel", index);
}

bool job_plan::compiles_alike() const {
  const auto& p = *m_impl;
  if (!p.spec.variants.empty()) return false;
  // A kernel whose compile options take no sweep parameter (nor its reference's, when that is a
  // kernel of its own): nothing else of a point reaches the compiler.
  const auto alike = [](const compiled_kernel& k) {
    const auto* c = std::get_if<compiled_custom>(&k);
    if (!c) return false;
    const auto* reference = std::get_if<compiled_launch>(&c->reference);
    return c->launch.substitutions.empty() && (!reference || reference->substitutions.empty());
  };
  if (!alike(p.kernel)) return false;
  return !p.baseline || !std::holds_alternative<compiled_custom>(*p.baseline) || alike(*p.baseline);
}

std::size_t job_plan::variant_count() const {
  return m_impl->spec.variants.size();
}

std::size_t job_plan::kernels_per_point() const {
  return std::max<std::size_t>(1, m_impl->spec.variants.size());
}

std::optional<std::size_t> job_plan::baseline_variant() const {
  const auto& spec = m_impl->spec;
  if (!spec.baseline_variant) return std::nullopt;
  for (std::size_t v = 0; v < spec.variants.size(); ++v) {
    if (spec.variants[v].name == *spec.baseline_variant) return v;
  }
  return std::nullopt;
}

kernel_instance job_plan::resolve_variant(std::size_t variant, std::uint64_t index) const {
  const auto& p = *m_impl;
  return p.resolve_kernel(p.variants_compiled.at(variant), p.spec.variants.at(variant).kernel,
                          "variants[" + std::to_string(variant) + "]", index);
}

void job_plan::check_variants_fit(std::uint64_t index) const {
  const auto& p = *m_impl;
  if (p.spec.variants.empty()) return;
  // Measured side by side, every variant's buffers live on the device at once.
  double bytes = 0;
  for (std::size_t v = 0; v < p.spec.variants.size(); ++v)
    bytes += footprint_bytes(resolve_variant(v, index));
  p.check_bytes("variants", bytes, index);
}

std::optional<kernel_instance> job_plan::resolve_baseline(std::uint64_t index) const {
  const auto& p = *m_impl;
  if (!p.spec.fitness.baseline) return std::nullopt;
  auto out = p.resolve_kernel(*p.baseline, *p.spec.fitness.baseline, "fitness.baseline", index);
  // Interleaved with the kernel, the baseline's buffers live beside the kernel's.
  p.check_bytes("fitness.baseline", footprint_bytes(out) + footprint_bytes(resolve(index)), index);
  return out;
}

void job_plan::validate_all() const {
  auto& p = *m_impl;
  std::vector<plan_error::problem> problems;
  p.collecting = &problems;
  struct stop_collecting {
    const impl& p;
    ~stop_collecting() {
      p.collecting = nullptr;
      p.point_problems = 0;
    }
  } guard{p};
  // Every field is checked at every point: bounded, so that no submission holds a thread for
  // long (100,000 points of 72 expressions of 1,000 characters took 15 s).
  if (double(size()) * double(p.expression_chars) > k_max_expression_work) {
    throw plan_error("sweep", "its " + std::to_string(size()) + " points and " +
                                  std::to_string(p.expression_chars) +
                                  " characters of expressions are too much to check at every "
                                  "point (points times characters at most " +
                                  format_number(k_max_expression_work) +
                                  "): sweep fewer points or write shorter expressions");
  }
  for (std::uint64_t i = 0; i < size(); ++i) {
    p.point_problems = 0;
    if (p.spec.variants.empty()) {
      (void)resolve(i);
      if (p.point_problems == 0) (void)resolve_baseline(i);
    } else {
      for (std::size_t v = 0; v < p.spec.variants.size(); ++v)
        (void)resolve_variant(v, i);
      if (p.point_problems == 0) check_variants_fit(i);
    }
  }
  if (!problems.empty()) throw plan_error(std::move(problems));
}

std::vector<std::pair<std::string, std::int64_t>> job_plan::params(std::uint64_t index) const {
  const auto values = m_impl->spec.sweep.point(index);
  std::vector<std::pair<std::string, std::int64_t>> out;
  out.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    out.emplace_back(m_impl->names[i], values[i]);
  return out;
}

std::string job_plan::describe_point(std::uint64_t index) const {
  return m_impl->describe(index);
}

}  // namespace kernelscan
