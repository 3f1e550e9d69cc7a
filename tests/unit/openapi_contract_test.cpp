// The contract (api/openapi.yaml) documents every route the server registers, with its method.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
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

TEST(OpenApiContract, ServedCopyIsTheSourceFile) {
  const std::string text = read_file(std::string(KERNELSCAN_SOURCE_DIR) + "/api/openapi.yaml");
  const auto* asset = find_web_asset("/api/v1/openapi.yaml");
  ASSERT_NE(asset, nullptr);
  EXPECT_EQ(std::string(asset->data), text);
}

}  // namespace
}  // namespace kernelscan
