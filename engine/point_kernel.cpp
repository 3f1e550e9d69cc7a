#include "engine/point_kernel.hpp"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "engine/compile_watch.hpp"
#include "engine/detail/overloaded.hpp"
#include "engine/element.hpp"

namespace kernelscan {
namespace {

using detail::overloaded;

// Which of a, b, c a STREAM variant reads or writes, and which one it writes.
std::array<bool, 3> stream_uses(stream_variant v) {
  switch (v) {
    case stream_variant::copy:
      return {true, false, true};
    case stream_variant::scale:
      return {false, true, true};
    case stream_variant::add:
    case stream_variant::triad:
      return {true, true, true};
  }
  return {true, true, true};
}

int stream_output(stream_variant v) {
  switch (v) {
    case stream_variant::copy:
    case stream_variant::add:
      return 2;
    case stream_variant::scale:
      return 1;
    case stream_variant::triad:
      return 0;
  }
  return 0;
}

gemm_algorithm algorithm_of(gemm_impl i) {
  return i == gemm_impl::library ? gemm_algorithm::library : gemm_algorithm::builtin;
}

}  // namespace

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(1ull << 30));
  return text;
}

namespace {

const device_buffer* at(const buffer_set& set, int i) {
  return i < 0 ? nullptr : set[std::size_t(i)];
}

}  // namespace

launch_argument scalar_argument(dtype t, double value) {
  launch_argument a;
  a.what = launch_argument::kind::scalar;
  a.size = size_of(t);
  store_element(t, value, a.value.data());
  return a;
}

point_kernel::point_kernel(device_backend& backend, const kernel_instance& instance)
    : m_backend(backend), m_instance(&instance) {
  if (const auto* g = std::get_if<gemm_instance>(&instance)) {
    m_out_type = g->type;
    add_buffer("A", g->type, g->m * g->k, arg_init::random, false);
    add_buffer("B", g->type, g->k * g->n, arg_init::random, false);
    add_buffer("C", g->type, g->m * g->n, g->beta != 0 ? arg_init::random : arg_init::none, true);
    m_operands = {0, 1, 2};
    m_has_reference = true;
    return;
  }
  if (const auto* st = std::get_if<stream_instance>(&instance)) {
    m_out_type = st->type;
    const auto uses = stream_uses(st->variant);
    const int out = stream_output(st->variant);
    for (int i = 0; i < 3; ++i) {
      if (!uses[std::size_t(i)]) continue;
      m_operands[std::size_t(i)] = int(m_buffers.size());
      add_buffer(std::string(1, char('a' + i)), st->type, st->n,
                 i == out ? arg_init::none : arg_init::random, i == out);
    }
    m_has_reference = true;
    return;
  }

  const auto& c = std::get<custom_instance>(instance);
  for (const auto& a : c.args) {
    if (!a.pointer || a.local) continue;
    add_buffer(a.name, a.type, a.count, a.init, a.output, a.scratch);
    if (a.output) m_out_type = a.type;
  }
  m_function = backend.compile_or_recall_failure(*c.launch.kernel);
  if (!c.reference) return;
  m_has_reference = true;
  std::visit(overloaded{
                 [&](const gemm_instance& g) {
                   m_reference_operands = {int(bound(g.bind_a, g.type, g.m * g.k, "A")),
                                           int(bound(g.bind_b, g.type, g.k * g.n, "B")),
                                           int(bound(g.bind_c, g.type, g.m * g.n, "C"))};
                 },
                 [&](const stream_instance& s) {
                   // copy reads no b and scale no a: their names are empty.
                   const std::string* names[] = {&s.bind_a, &s.bind_b, &s.bind_c};
                   for (std::size_t i = 0; i < 3; ++i) {
                     if (names[i]->empty()) continue;
                     const char role[] = {char('a' + i), '\0'};
                     m_reference_operands[i] = int(bound(*names[i], s.type, s.n, role));
                   }
                 },
                 [&](const custom_launch& l) {
                   try {
                     m_reference_function = backend.compile_or_recall_failure(*l.kernel);
                   } catch (...) {
                     rethrow_for("kernel.reference");
                   }
                 },
             },
             *c.reference);
}

void point_kernel::add_buffer(std::string name, dtype t, std::int64_t count, arg_init init,
                              bool output, bool scratch) {
  point_buffer b;
  b.name = std::move(name);
  b.type = t;
  b.count = count;
  b.init = init;
  b.output = output;
  b.scratch = scratch;
  if (b.bytes() + 2 * k_canary_bytes > m_backend.max_allocation()) {
    throw backend_error(fault_kind::out_of_memory,
                        "buffer \"" + b.name + "\" needs " + gib(double(b.bytes())) +
                            "; this device allocates at most " +
                            gib(double(m_backend.max_allocation())) + " at once");
  }
  b.mem = m_backend.allocate_guarded(b.bytes(), k_canary_bytes);
  m_buffers.push_back(std::move(b));
}

void point_kernel::load_fresh() {
  if (const auto* c = std::get_if<custom_instance>(m_instance)) {
    const compile_scope watched;
    m_function = m_backend.compile_fresh(*c->launch.kernel);
  }
}

std::optional<kernel_resources> point_kernel::resources() const {
  const auto* c = std::get_if<custom_instance>(m_instance);
  if (!c) return std::nullopt;
  return m_backend.resources(m_function, c->launch);
}

std::size_t point_kernel::bound(const std::string& name, dtype t, std::int64_t count,
                                const char* role) const {
  for (std::size_t i = 0; i < m_buffers.size(); ++i) {
    const auto& b = m_buffers[i];
    if (b.name != name) continue;
    if (b.type != t || b.count < count) {
      throw std::invalid_argument("reference: argument \"" + name + "\" bound to " + role +
                                  " must be " + std::string(to_string(t)) + " with " +
                                  std::to_string(count) + " elements or more");
    }
    return i;
  }
  throw std::invalid_argument("reference: no buffer argument named \"" + name + "\" to bind to " +
                              role);
}

buffer_set point_kernel::own_buffers() const {
  buffer_set set;
  set.reserve(m_buffers.size());
  for (const auto& b : m_buffers)
    set.push_back(&b.mem);
  return set;
}

const std::vector<launch_argument>& point_kernel::arguments(const buffer_set& buffers) {
  const auto& c = std::get<custom_instance>(*m_instance);
  m_args.clear();
  std::size_t next = 0;
  for (const auto& a : c.args) {
    if (!a.pointer) {
      m_args.push_back(scalar_argument(a.type, a.value));
    } else if (a.local) {
      launch_argument l;
      l.what = launch_argument::kind::local;
      l.size = std::uint64_t(a.count) * size_of(a.type);
      m_args.push_back(l);
    } else {
      launch_argument b;
      b.what = launch_argument::kind::buffer;
      b.buffer = buffers[next++];
      m_args.push_back(b);
    }
  }
  return m_args;
}

void point_kernel::launch(const buffer_set& buffers) {
  std::visit(overloaded{
                 [&](const gemm_instance& g) {
                   m_backend.gemm({&g, algorithm_of(g.impl), at(buffers, m_operands[0]),
                                   at(buffers, m_operands[1]), at(buffers, m_operands[2])});
                 },
                 [&](const stream_instance& s) {
                   m_backend.stream({&s, false, at(buffers, m_operands[0]),
                                     at(buffers, m_operands[1]), at(buffers, m_operands[2])});
                 },
                 [&](const custom_instance& c) {
                   m_backend.launch({&c, &c.launch, m_function, arguments(buffers)});
                 },
             },
             *m_instance);
}

std::string point_kernel::reference_key() const {
  if (!m_has_reference) return "";
  std::ostringstream key;
  key.precision(17);
  for (const auto& b : m_buffers) {
    key << "buffer " << b.name << ' ' << int(b.type) << ' ' << b.count << ' ' << int(b.init) << ' '
        << b.output << b.scratch << '\n';
  }
  auto gemm = [&key](const gemm_instance& g, bool library) {
    key << "gemm " << g.m << ' ' << g.n << ' ' << g.k << ' ' << int(g.type) << ' '
        << int(g.layout_a) << ' ' << int(g.layout_b) << ' ' << g.alpha << ' ' << g.beta << ' '
        << library << '\n';
  };
  auto stream = [&key](const stream_instance& s) {
    key << "stream " << int(s.variant) << ' ' << s.n << ' ' << int(s.type) << ' ' << s.scalar
        << '\n';
  };
  if (const auto* g = std::get_if<gemm_instance>(m_instance)) {
    gemm(*g, false);
    return key.str();
  }
  if (const auto* s = std::get_if<stream_instance>(m_instance)) {
    stream(*s);
    return key.str();
  }
  const auto& c = std::get<custom_instance>(*m_instance);
  for (int op : m_reference_operands)
    key << "operand " << op << '\n';
  std::visit(overloaded{
                 [&](const gemm_instance& g) {
                   gemm(g, g.impl == gemm_impl::library &&
                               m_backend.supports_gemm(gemm_algorithm::library, g.type));
                 },
                 [&](const stream_instance& s) { stream(s); },
                 [&](const custom_launch& l) {
                   // Launched with the kernel's own arguments, scalars and local memory too.
                   const custom_kernel& k = *l.kernel;
                   key << "custom " << int(k.language) << ' ' << k.entry << ' ' << l.block[0] << ' '
                       << l.block[1] << ' ' << l.block[2] << ' ' << l.grid[0] << ' ' << l.grid[1]
                       << ' ' << l.grid[2] << ' ' << l.shared_bytes << '\n';
                   for (const auto& o : k.compile_options)
                     key << "option " << o.size() << ' ' << o << '\n';
                   key << "source " << k.source.size() << '\n' << k.source << '\n';
                   for (const auto& a : c.args) {
                     key << "arg " << a.name << ' ' << int(a.type) << ' ' << a.pointer << ' '
                         << a.count << ' ' << int(a.init) << ' ' << a.output << ' ' << a.value
                         << ' ' << a.local << ' ' << a.scratch << '\n';
                   }
                 },
             },
             *c.reference);
  return key.str();
}

void point_kernel::launch_reference(const buffer_set& buffers) {
  if (const auto* g = std::get_if<gemm_instance>(m_instance)) {
    m_backend.gemm({g, gemm_algorithm::reference, at(buffers, m_operands[0]),
                    at(buffers, m_operands[1]), at(buffers, m_operands[2])});
    return;
  }
  if (const auto* s = std::get_if<stream_instance>(m_instance)) {
    m_backend.stream({s, true, at(buffers, m_operands[0]), at(buffers, m_operands[1]),
                      at(buffers, m_operands[2])});
    return;
  }
  const auto& c = std::get<custom_instance>(*m_instance);
  const auto& ops = m_reference_operands;
  std::visit(
      overloaded{
          [&](const gemm_instance& g) {
            // A library reference is the library's answer where the device has one.
            const bool library = g.impl == gemm_impl::library &&
                                 m_backend.supports_gemm(gemm_algorithm::library, g.type);
            m_backend.gemm({&g, library ? gemm_algorithm::library : gemm_algorithm::reference,
                            at(buffers, ops[0]), at(buffers, ops[1]), at(buffers, ops[2])});
          },
          [&](const stream_instance& s) {
            m_backend.stream(
                {&s, true, at(buffers, ops[0]), at(buffers, ops[1]), at(buffers, ops[2])});
          },
          [&](const custom_launch& l) {
            m_backend.launch({&c, &l, m_reference_function, arguments(buffers)});
          },
      },
      *c.reference);
}

}  // namespace kernelscan
