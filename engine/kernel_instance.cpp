#include "engine/kernel_instance.hpp"

#include "engine/detail/overloaded.hpp"

namespace kernelscan {
namespace {

using detail::overloaded;

double stream_arrays(stream_variant v) {
  switch (v) {
    case stream_variant::copy:
    case stream_variant::scale:
      return 2;
    case stream_variant::add:
    case stream_variant::triad:
      return 3;
  }
  return 0;
}

double stream_flops_per_element(stream_variant v) {
  switch (v) {
    case stream_variant::copy:
      return 0;
    case stream_variant::scale:
    case stream_variant::add:
      return 1;
    case stream_variant::triad:
      return 2;
  }
  return 0;
}

double gemm_bytes(const gemm_instance& g) {
  const double e = double(size_of(g.type));
  const double mn = double(g.m) * double(g.n);
  // A and B read once, C written once, and read too when beta contributes.
  return e * (double(g.m) * double(g.k) + double(g.k) * double(g.n) + mn * (g.beta != 0 ? 2 : 1));
}

}  // namespace

double workload_flops(const kernel_instance& k) {
  return std::visit(
      overloaded{
          [](const gemm_instance& g) { return 2.0 * double(g.m) * double(g.n) * double(g.k); },
          [](const stream_instance& s) {
            return stream_flops_per_element(s.variant) * double(s.n);
          },
          [](const custom_instance& c) { return c.flops.value_or(0.0); },
      },
      k);
}

double workload_bytes(const kernel_instance& k) {
  return std::visit(overloaded{
                        [](const gemm_instance& g) { return gemm_bytes(g); },
                        [](const stream_instance& s) {
                          return stream_arrays(s.variant) * double(s.n) * double(size_of(s.type));
                        },
                        [](const custom_instance& c) {
                          if (c.bytes) return *c.bytes;
                          double sum = 0;
                          for (const auto& a : c.args)
                            sum += double(a.bytes());
                          return sum;
                        },
                    },
                    k);
}

double footprint_bytes(const kernel_instance& k) {
  return std::visit(overloaded{
                        [](const gemm_instance& g) {
                          const double e = double(size_of(g.type));
                          // A, B, C and the reference's C.
                          return e * (double(g.m) * double(g.k) + double(g.k) * double(g.n) +
                                      2 * double(g.m) * double(g.n));
                        },
                        [](const stream_instance& s) {
                          return (stream_arrays(s.variant) + 1) * double(s.n) *
                                 double(size_of(s.type));
                        },
                        [](const custom_instance& c) {
                          double sum = 0;
                          for (const auto& a : c.args)
                            sum += double(a.bytes()) * (a.output ? 2 : 1);
                          return sum;
                        },
                    },
                    k);
}

}  // namespace kernelscan
