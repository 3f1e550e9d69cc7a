// The contract (api/openapi.yaml) documents every route the server registers, with its method.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "server/http_api.hpp"
#include "server/web_assets.hpp"

namespace kernelscan {
namespace {

// The paths section of an OpenAPI document, as {path -> methods}: keys indented two spaces
// under `paths:`, methods four spaces under a path.
std::map<std::string, std::set<std::string>> openapi_paths(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream in(text);
  std::string line, current;
  bool in_paths = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("paths:", 0) == 0) {
      in_paths = true;
      continue;
    }
    if (!in_paths) continue;
    if (!line.empty() && line[0] != ' ' && line[0] != '#') break;  // next top-level key
    if (line.size() > 3 && line.rfind("  /", 0) == 0 && line.back() == ':') {
      current = line.substr(2, line.size() - 3);
      if (current.size() > 1 && current.front() == '"')
        current = current.substr(1, current.size() - 2);
      out[current];
    } else if (!current.empty() && line.rfind("    ", 0) == 0 && line[4] != ' ') {
      const auto colon = line.find(':');
      const std::string key = line.substr(4, colon - 4);
      static const std::set<std::string> k_methods{"get", "post", "put", "patch", "delete"};
      if (k_methods.count(key)) out[current].insert(key);
    }
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(OpenApiContract, EveryRegisteredRouteIsDocumented) {
  const std::string text = read_file(std::string(KERNELSCAN_SOURCE_DIR) + "/api/openapi.yaml");
  ASSERT_FALSE(text.empty());
  const auto paths = openapi_paths(text);
  ASSERT_FALSE(paths.empty()) << "no paths found in api/openapi.yaml";
  for (const auto& [method, path] : http_api::routes()) {
    std::string m = method;
    for (auto& c : m)
      c = char(std::tolower(c));
    auto it = paths.find(path);
    ASSERT_NE(it, paths.end()) << path << " is registered but not in api/openapi.yaml";
    EXPECT_TRUE(it->second.count(m)) << method << " " << path << " is not documented";
  }
}

TEST(OpenApiContract, EveryDocumentedRouteIsRegistered) {
  const std::string text = read_file(std::string(KERNELSCAN_SOURCE_DIR) + "/api/openapi.yaml");
  std::set<std::pair<std::string, std::string>> registered;
  for (const auto& [method, path] : http_api::routes()) {
    std::string m = method;
    for (auto& c : m)
      c = char(std::tolower(c));
    registered.emplace(m, path);
  }
  for (const auto& [path, methods] : openapi_paths(text)) {
    for (const auto& m : methods) {
      EXPECT_TRUE(registered.count({m, path}))
          << m << " " << path << " is documented but the server has no such route";
    }
  }
}

// The error types the daemon answers with, as its sources write them: a 4xx or 5xx status and
// the type after it (api_error(409, "job_finished", ...), send_error(501, "not_implemented",
// ...)), an error_body("type", ...), or a body written out whole ("type":"overloaded").
std::set<std::string> error_types_in_sources() {
  static const std::regex k_status_type(R"re(\b[45][0-9][0-9],\s*"([a-z_]+)")re");
  static const std::regex k_body_type(R"re(error_body\(\s*"([a-z_]+)")re");
  static const std::regex k_written_type(R"re("type":\s*"([a-z_]+)")re");
  std::set<std::string> out;
  for (const char* dir : {"server", "server/detail", "api"}) {
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(KERNELSCAN_SOURCE_DIR) + "/" + dir)) {
      // The worker protocol's messages have types of their own, not errors of the API.
      if (e.path().extension() != ".cpp" || e.path().filename() == "worker_protocol.cpp") continue;
      const std::string text = read_file(e.path().string());
      for (const auto* re : {&k_status_type, &k_body_type, &k_written_type}) {
        for (std::sregex_iterator it(text.begin(), text.end(), *re), end; it != end; ++it)
          out.insert((*it)[1].str());
      }
    }
  }
  return out;
}

// Every error type the daemon answers with is in the Error schema's enum and in the table of
// the API's description, and each of those is one it answers with (or httplib's http_error).
TEST(OpenApiContract, EveryErrorTypeIsDocumented) {
  const std::string text = read_file(std::string(KERNELSCAN_SOURCE_DIR) + "/api/openapi.yaml");
  std::set<std::string> table, listed;
  static const std::regex k_row(R"re(\|\s*[45][0-9][0-9]\s*\|\s*`([a-z_]+)`\s*\|)re");
  for (std::sregex_iterator it(text.begin(), text.end(), k_row), end; it != end; ++it)
    table.insert((*it)[1].str());
  // The enum of the Error schema's type: the list after its `enum:`.
  const auto schema = text.find("\n    Error:\n");
  ASSERT_NE(schema, std::string::npos);
  const auto enum_at = text.find("enum:\n", schema);
  ASSERT_NE(enum_at, std::string::npos);
  std::istringstream in(text.substr(enum_at + 6));
  for (std::string line; std::getline(in, line) && line.find("- ") != std::string::npos;)
    listed.insert(line.substr(line.find("- ") + 2));
  const std::set<std::string> used = error_types_in_sources();
  ASSERT_GT(used.size(), 20u);
  for (const auto& type : used) {
    EXPECT_TRUE(listed.count(type)) << type << " is not in the Error schema's enum";
    EXPECT_TRUE(table.count(type)) << type << " is not in the table of error types";
  }
  for (const auto& type : listed) {
    EXPECT_TRUE(type == "http_error" || table.count(type)) << type << " is not in the table";
  }
  for (const auto& type : table)
    EXPECT_TRUE(listed.count(type)) << type << " is in the table, not the enum";
}

TEST(OpenApiContract, ServedCopyIsTheSourceFile) {
  const std::string text = read_file(std::string(KERNELSCAN_SOURCE_DIR) + "/api/openapi.yaml");
  const auto* asset = find_web_asset("/api/v1/openapi.yaml");
  ASSERT_NE(asset, nullptr);
  EXPECT_EQ(std::string(asset->data), text);
}

}  // namespace
}  // namespace kernelscan
