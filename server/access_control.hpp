#pragma once
// Who may do what: bearer tokens for mutating requests (and reads with auth_reads), operator
// tokens for defining evaluation tasks and seeing their held-out points (also valid wherever a
// token is), a per-client token bucket on job submissions, and the CORS origins allowed.
//
// Threading: thread-safe. Tokens and origins are fixed at construction; the rate limiter takes a
// short mutex per submission.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kernelscan {

class access_control {
 public:
  using clock = std::chrono::steady_clock;

  struct options {
    std::string token_file;             // one token per line; blank lines and # comments skipped
    bool auth_reads = false;            // GETs need a token too (health probes never do)
    double submissions_per_minute = 0;  // per client address; 0: unlimited
    std::string cors_origins;           // "", "*", or a comma-separated list of origins
    std::string operator_token_file;    // as token_file, for operators
  };

  // Throws std::runtime_error naming the problem for an unreadable or empty token file.
  explicit access_control(options opts);

  bool tokens_configured() const { return !m_tokens.empty() || !m_operator_tokens.empty(); }
  bool operators_configured() const { return !m_operator_tokens.empty(); }
  bool reads_need_token() const { return m_options.auth_reads && tokens_configured(); }
  // True if `authorization` ("Bearer <token>") carries a configured token. Compares in constant
  // time, so response timing does not leak how much of a token matched.
  bool authorized(std::string_view authorization) const;
  // True if the caller is an operator: it carries an operator token, or no operator tokens are
  // configured and it may write (any caller where no tokens are configured at all).
  bool is_operator(std::string_view authorization) const;

  // Who a request comes from, for bounds on each agent's submissions to a task: its bearer
  // token where it carries a valid one ("token:" and the first 128 bits of the token's SHA-256
  // in hex: the store never holds a token), else its address ("address:127.0.0.1").
  std::string agent_of(std::string_view authorization, const std::string& address) const;

  // Takes one submission from `client`'s bucket (burst: a tenth of the per-minute rate, at least
  // 1). Returns nullopt if allowed, else the seconds until one is.
  std::optional<double> take_submission(const std::string& client, clock::time_point now);

  // The Access-Control-Allow-Origin value for a request's Origin header, or "" for none.
  std::string allowed_origin(std::string_view origin) const;
  bool cors_enabled() const { return !m_origins.empty(); }

 private:
  struct bucket {
    double tokens = 0;
    clock::time_point updated;
  };

  // `authorization` ("Bearer <token>") carries one of `tokens`, compared in constant time.
  static bool presents(std::string_view authorization, const std::vector<std::string>& tokens);

  options m_options;
  std::vector<std::string> m_tokens;
  std::vector<std::string> m_operator_tokens;
  std::vector<std::string> m_origins;
  double m_burst = 1;
  std::mutex m_mutex;
  std::unordered_map<std::string, bucket> m_buckets;
};

}  // namespace kernelscan
