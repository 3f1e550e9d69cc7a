#include "engine/device_backend.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "engine/compile_watch.hpp"
#include "engine/element.hpp"
#include "engine/utf8.hpp"

namespace kernelscan {

kernel_id device_backend::compile_or_recall_failure(const custom_kernel& kernel) {
  std::string key = compile_key(kernel);
  if (const auto known = m_compile_failures.find(key); known != m_compile_failures.end()) {
    throw compile_error(known->second);
  }
  try {
    const compile_scope watched;
    return compile(kernel);
  } catch (const compile_error& e) {
    if (m_compile_failures.size() >= k_remembered_failures) m_compile_failures.clear();
    m_compile_failures.emplace(std::move(key), e.what());
    throw;
  }
}

std::string bounded_compile_log(std::string_view log) {
  std::string_view kept = log;
  if (log.size() > k_compile_log_bytes) {
    kept = log.substr(0, k_compile_log_bytes);
    // At a line's end where there is one in the second half, else wherever (a byte cut in two
    // is written as the bytes it is).
    if (const auto nl = kept.rfind('\n'); nl != std::string_view::npos && nl > kept.size() / 2) {
      kept = kept.substr(0, nl);
    }
  }
  std::string out;
  out.reserve(kept.size() + 96);
  for (std::size_t i = 0; i < kept.size();) {
    const std::size_t n = utf8_sequence(kept, i);
    if (n > 0) {
      out.append(kept, i, n);
      i += n;
      continue;
    }
    static constexpr char hex[] = "0123456789ABCDEF";
    const auto b = static_cast<unsigned char>(kept[i++]);
    out += '<';
    out += hex[b >> 4];
    out += hex[b & 15];
    out += '>';
  }
  if (kept.size() < log.size()) {
    out += "\n... (the log goes on for " + std::to_string(log.size() - kept.size()) +
           " bytes more; its first " + std::to_string(kept.size()) + " are shown)";
  }
  return out;
}

void rethrow_for(const std::string& whose) {
  try {
    throw;
  } catch (const compile_error& e) {
    throw compile_error(whose + ": " + e.what());
  } catch (const backend_error& e) {
    throw backend_error(e.kind(), whose + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(whose + ": " + e.what());
  }
}

verification_result device_backend::simulate_verification(const job_spec&, const kernel_instance&) {
  verification_result v;
  v.note = "this backend runs the kernel's device code and verifies it for real";
  return v;
}

// Read back in chunks of 4 MiB; four FNV-style lanes over 64-bit words (the bytes past the last
// whole word in lane 0), so that hashing keeps up with reading the buffer back.
std::uint64_t device_backend::hash(const device_buffer& b, std::uint64_t bytes) {
  constexpr std::uint64_t chunk_bytes = std::uint64_t(1) << 22;
  constexpr std::uint64_t prime = 0x100000001b3ull;
  std::uint64_t lanes[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull,
                            0xc2b2ae3d27d4eb4full};
  std::vector<unsigned char> chunk;
  for (std::uint64_t off = 0; off < bytes; off += chunk_bytes) {
    chunk.resize(std::size_t(std::min(chunk_bytes, bytes - off)));
    read(b, off, chunk.data(), chunk.size());
    const std::size_t words = chunk.size() / 8;
    std::size_t w = 0;
    for (; w + 4 <= words; w += 4) {
      for (int l = 0; l < 4; ++l) {
        std::uint64_t x = 0;
        std::memcpy(&x, chunk.data() + (w + std::size_t(l)) * 8, 8);
        lanes[l] = (lanes[l] ^ x) * prime;
      }
    }
    for (; w < words; ++w) {
      std::uint64_t x = 0;
      std::memcpy(&x, chunk.data() + w * 8, 8);
      lanes[0] = (lanes[0] ^ x) * prime;
    }
    for (std::size_t c = words * 8; c < chunk.size(); ++c)
      lanes[0] = (lanes[0] ^ chunk[c]) * prime;
  }
  return mix64(lanes[0] ^ mix64(lanes[1] ^ mix64(lanes[2] ^ mix64(lanes[3]))));
}

grouped_fills group_fills(std::span<const fill_target> fills, std::size_t most) {
  using key = std::tuple<bool, dtype, std::int64_t, std::uint64_t>;  // as fill_group's
  std::map<key, std::vector<const fill_target*>> by_key;
  grouped_fills out;
  for (const auto& t : fills) {
    const fill_request& f = t.request;
    if (f.count <= 0) continue;
    if (f.kind == fill_kind::random) {
      by_key[{true, f.type, f.count, 0}].push_back(&t);
      continue;
    }
    const std::uint64_t bytes = std::uint64_t(f.count) * size_of(f.type);
    if (f.kind == fill_kind::arange || bytes % 8 != 0) {
      out.single.push_back(&t);
      continue;
    }
    unsigned char element[8];
    if (f.kind == fill_kind::value) {
      store_element(f.type, f.value, element);
    } else {
      store_unwritten(f.type, element, f.pattern);
    }
    unsigned char word[8];
    for (std::size_t i = 0; i < 8; ++i)
      word[i] = element[i % size_of(f.type)];
    by_key[{false, dtype::u8, std::int64_t(bytes / 8), std::bit_cast<std::uint64_t>(word)}]
        .push_back(&t);
  }
  for (auto& [k, members] : by_key) {
    for (std::size_t at = 0; at < members.size(); at += most) {
      const auto end = members.begin() + std::ptrdiff_t(std::min(members.size(), at + most));
      fill_group g{std::get<0>(k),
                   std::get<1>(k),
                   std::get<2>(k),
                   std::get<3>(k),
                   {members.begin() + std::ptrdiff_t(at), end}};
      if (g.members.size() == 1) {
        out.single.push_back(g.members.front());
      } else {
        out.groups.push_back(std::move(g));
      }
    }
  }
  return out;
}

void device_backend::fill_all(std::span<const fill_target> fills) {
  for (const auto& f : fills)
    fill(*f.buffer, f.request);
}

void device_backend::write_guards(std::span<const guard_ref> guards, const void* canary) {
  for (const auto& g : guards)
    write_guard(*g.buffer, g.side, canary);
}

std::vector<bool> device_backend::guards_hold(std::span<const guard_ref> guards,
                                              const void* canary) {
  std::vector<unsigned char> copies(guard_bytes(guards));
  std::uint64_t at = 0;
  for (const auto& g : guards) {
    if (!g.buffer->guard()) continue;
    read_guard(*g.buffer, g.side, copies.data() + at);
    at += g.buffer->guard();
  }
  return guards_match(guards, copies.data(), canary);
}

std::uint64_t device_backend::guard_bytes(std::span<const guard_ref> guards) {
  std::uint64_t bytes = 0;
  for (const auto& g : guards)
    bytes += g.buffer->guard();
  return bytes;
}

std::vector<bool> device_backend::guards_match(std::span<const guard_ref> guards,
                                               const unsigned char* copies, const void* canary) {
  std::vector<bool> out;
  out.reserve(guards.size());
  for (const auto& g : guards) {
    const std::uint64_t bytes = g.buffer->guard();
    out.push_back(!bytes || std::memcmp(copies, canary, bytes) == 0);
    copies += bytes;
  }
  return out;
}

void device_backend::xor_keystream(const device_buffer& b, std::uint64_t words,
                                   const device_buffer& pad, std::uint64_t pad_words,
                                   const device_buffer& periods) {
  if (words == 0) return;
  const std::uint64_t period_count = (words + pad_words - 1) / pad_words;
  std::vector<std::uint64_t> stream(pad_words), tweak(period_count), data(words);
  read(pad, 0, stream.data(), pad_words * 8);
  read(periods, 0, tweak.data(), period_count * 8);
  read(b, 0, data.data(), words * 8);
  for (std::uint64_t j = 0; j < words; ++j)
    data[j] ^= stream[j & (pad_words - 1)] ^ tweak[j / pad_words];
  write(b, 0, data.data(), words * 8);
}

std::vector<std::uint64_t> device_backend::hash_all(std::span<const hash_ref> refs) {
  std::vector<std::uint64_t> out;
  out.reserve(refs.size());
  for (const auto& r : refs)
    out.push_back(hash(*r.buffer, r.bytes));
  return out;
}

std::vector<std::uint64_t> device_backend::hash_by_words(
    std::span<const hash_ref> refs,
    const std::function<std::vector<std::vector<std::uint64_t>>(std::span<const word_job>)>&
        word_hashes,
    std::int64_t words_per_thread) {
  std::vector<word_job> jobs;
  for (const auto& r : refs) {
    const std::int64_t words = std::int64_t(r.bytes / 8);
    if (words == 0) continue;
    jobs.push_back({r.buffer, words, word_threads(words, words_per_thread)});
  }
  const auto partials =
      jobs.empty() ? std::vector<std::vector<std::uint64_t>>{} : word_hashes(jobs);
  std::vector<std::uint64_t> out;
  out.reserve(refs.size());
  std::size_t job = 0;
  for (const auto& r : refs) {
    std::uint64_t h = mix64(r.bytes);
    if (r.bytes >= 8) {
      for (const std::uint64_t x : partials.at(job++))
        h = mix64(h ^ x);
    }
    if (const std::uint64_t tail = r.bytes % 8) {
      unsigned char last[8] = {};
      read(*r.buffer, r.bytes - tail, last, tail);
      for (std::uint64_t i = 0; i < tail; ++i)
        h = mix64(h ^ last[i]);
    }
    out.push_back(h);
  }
  return out;
}

double device_backend::clock_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::optional<telemetry_reading> device_backend::read_telemetry() {
  return std::nullopt;
}

}  // namespace kernelscan
