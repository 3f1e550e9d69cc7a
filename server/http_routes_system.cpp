#include <fstream>
#include <iterator>
#include <string>

#include "server/detail/http_api_impl.hpp"
#include "server/metrics_text.hpp"
#include "server/web_assets.hpp"

namespace kernelscan {

namespace {

// The type of a file served from --web-root that the build did not embed (a view added since):
// by its extension, as cmake/embed_assets.cmake types the embedded ones. A browser runs a module
// only when it comes as JavaScript.
std::string content_type_by_extension(const std::string& file) {
  const auto dot = file.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : file.substr(dot);
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".yaml" || ext == ".yml") return "application/yaml; charset=utf-8";
  if (ext == ".json") return "application/json";
  if (ext == ".png") return "image/png";
  return "application/octet-stream";
}

}  // namespace

response http_api::impl::healthz(const request&) {
  return json_response(200, {{"status", "ok"}});
}

response http_api::impl::readyz(const request&) {
  json devices = json::array();
  std::vector<field_error> unready;  // one per device without a running worker
  for (const auto& d : sched.devices()) {
    devices.push_back({{"index", d.info.index}, {"state", to_string(d.state)}});
    if (d.state != device_state::idle && d.state != device_state::busy) {
      unready.push_back({"devices[" + std::to_string(d.info.index) + "]",
                         "is " + std::string(to_string(d.state)) + ": no running worker" +
                             (d.last_error.empty() ? "" : " (" + d.last_error + ")")});
    }
  }
  // Readiness includes being able to read the store (a storage error answers 503 itself).
  store.ping();
  if (!sched.ready()) {
    return json_response(503, error_body("not_ready", "not every device has a running worker",
                                         unready, json{{"devices", devices}}));
  }
  return json_response(200, {{"status", "ready"}, {"storage", "ok"}, {"devices", devices}});
}

response http_api::impl::metrics_text(const request&) {
  response r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = prometheus_text(store, sched, requests, long_polls.load());
  return r;
}

response http_api::impl::asset(const request& req) {
  std::string path = req.path;
  if (!req.captures.empty()) {
    // /assets/{file}: a plain file name, so nothing outside the asset directory is reachable.
    const auto& file = req.captures.front();
    const bool plain =
        file.front() != '.' && std::all_of(file.begin(), file.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        });
    if (!plain) throw api_error(404, "not_found", "no such file: " + path);
  }
  if (!config.web_root.empty() && path != "/api/v1/openapi.yaml") {
    // Development: serve the page from disk so edits show without a rebuild. A file that is
    // not there (ECharts, from node_modules) comes from the embedded copy.
    const std::string file = path == "/" ? "index.html" : path.substr(path.rfind('/') + 1);
    if (std::ifstream in(config.web_root + "/" + file, std::ios::binary); in) {
      response r;
      r.body.assign(std::istreambuf_iterator<char>(in), {});
      const auto* embedded = find_web_asset(path);
      r.content_type =
          embedded ? std::string(embedded->content_type) : content_type_by_extension(file);
      r.headers.emplace_back("Cache-Control", "no-store");
      return r;
    }
  }
  const web_asset* a = find_web_asset(path);
  if (!a) throw api_error(404, "not_found", "no such file: " + path);
  response r;
  r.headers.emplace_back("ETag", std::string(a->etag));
  r.headers.emplace_back("Cache-Control", "no-cache");
  if (!a->gzip.empty()) r.headers.emplace_back("Vary", "Accept-Encoding");
  if (etag_matches(req.header("If-None-Match"), a->etag)) {
    r.status = 304;
    r.content_type.clear();
    return r;
  }
  r.content_type = std::string(a->content_type);
  const bool gzip = !a->gzip.empty() && accepts_gzip(req.header("Accept-Encoding"));
  if (gzip) r.headers.emplace_back("Content-Encoding", "gzip");
  r.body = std::string(gzip ? a->gzip : a->data);
  return r;
}

}  // namespace kernelscan
