#pragma once
// Files embedded into the binary at build time (web/ and api/openapi.yaml; see
// cmake/embed_assets.cmake). Immutable; thread-safe.

#include <span>
#include <string_view>

namespace kernelscan {

struct web_asset {
  std::string_view path;  // URL path: "/", "/assets/app.js", "/api/v1/openapi.yaml"
  std::string_view content_type;
  std::string_view data;
  std::string_view etag;  // quoted strong ETag from the content's SHA-256
  // The same content gzip-compressed at build time, or empty (binary or small files).
  std::string_view gzip;
};

std::span<const web_asset> web_assets();
const web_asset* find_web_asset(std::string_view path);

}  // namespace kernelscan
