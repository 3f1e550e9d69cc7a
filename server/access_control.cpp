#include "server/access_control.hpp"

#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "server/detail/comma_list.hpp"

namespace kernelscan {
namespace {

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Buckets of clients idle this long are full again; forgetting them bounds the memory a stream
// of new client addresses can take.
constexpr auto k_forget_after = std::chrono::minutes(10);
constexpr std::size_t k_prune_at = 10000;

}  // namespace

// Tokens of `file`, one per line (blank lines and # comments skipped); `option` names it in
// errors. Throws std::runtime_error for an unreadable file, a short token or none at all.
static std::vector<std::string> read_tokens(const std::string& file, const std::string& option) {
  std::vector<std::string> tokens;
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + option + " " + file);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    if (line.size() < 16) {
      throw std::runtime_error(option + " " + file + ": tokens must be at least 16 characters");
    }
    tokens.push_back(line);
  }
  if (tokens.empty()) throw std::runtime_error(option + " " + file + " holds no token");
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && (st.st_mode & S_IROTH)) {
    spdlog::warn("{} {} is readable by every user; chmod 600 it", option, file);
  }
  return tokens;
}

access_control::access_control(options opts) : m_options(std::move(opts)) {
  if (!m_options.token_file.empty()) {
    m_tokens = read_tokens(m_options.token_file, "--token-file");
  }
  if (!m_options.operator_token_file.empty()) {
    m_operator_tokens = read_tokens(m_options.operator_token_file, "--operator-token-file");
  }
  if (m_options.auth_reads && !tokens_configured()) {
    throw std::runtime_error("--auth-reads needs --token-file");
  }
  for (const auto item : detail::split_commas(m_options.cors_origins)) {
    std::string origin = trim(std::string(item));
    if (!origin.empty()) m_origins.push_back(std::move(origin));
  }
  m_burst = std::max(1.0, std::floor(m_options.submissions_per_minute / 10));
}

bool access_control::presents(std::string_view authorization,
                              const std::vector<std::string>& tokens) {
  constexpr std::string_view k_scheme = "Bearer ";
  if (authorization.size() <= k_scheme.size() ||
      !std::equal(k_scheme.begin(), k_scheme.end(), authorization.begin(),
                  [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
    return false;
  }
  const std::string_view presented = authorization.substr(k_scheme.size());
  bool ok = false;
  for (const auto& token : tokens)
    ok |= constant_time_equal(presented, token);
  return ok;
}

bool access_control::authorized(std::string_view authorization) const {
  // Both lists are compared whatever the first says: timing tells nothing of which matched.
  const bool write = presents(authorization, m_tokens);
  const bool operate = presents(authorization, m_operator_tokens);
  return write || operate;
}

bool access_control::is_operator(std::string_view authorization) const {
  if (!operators_configured()) return !tokens_configured() || authorized(authorization);
  return presents(authorization, m_operator_tokens);
}

std::string access_control::agent_of(std::string_view authorization,
                                     const std::string& address) const {
  if (!authorized(authorization)) return "address:" + address;
  const std::string_view token = authorization.substr(std::string_view("Bearer ").size());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  constexpr char k_hex[] = "0123456789abcdef";
  std::string out = "token:";
  for (unsigned int i = 0; i < std::min(size, 16u); ++i) {
    out += k_hex[digest[i] >> 4];
    out += k_hex[digest[i] & 15];
  }
  return out;
}

std::optional<double> access_control::take_submission(const std::string& client,
                                                      clock::time_point now) {
  if (m_options.submissions_per_minute <= 0) return std::nullopt;
  const double per_second = m_options.submissions_per_minute / 60.0;
  std::lock_guard lock(m_mutex);
  if (m_buckets.size() >= k_prune_at) {
    std::erase_if(m_buckets,
                  [&](const auto& kv) { return now - kv.second.updated > k_forget_after; });
  }
  auto [it, fresh] = m_buckets.try_emplace(client, bucket{m_burst, now});
  auto& b = it->second;
  if (!fresh) {
    const double elapsed = std::chrono::duration<double>(now - b.updated).count();
    b.tokens = std::min(m_burst, b.tokens + elapsed * per_second);
    b.updated = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return std::nullopt;
  }
  return (1 - b.tokens) / per_second;
}

std::string access_control::allowed_origin(std::string_view origin) const {
  if (origin.empty()) return "";
  for (const auto& o : m_origins) {
    if (o == "*") return "*";
    if (o == origin) return std::string(origin);
  }
  return "";
}

}  // namespace kernelscan
