#pragma once
// The chat page `lumen serve` answers at `/`: static files (src/server/web/) whose bytes are
// compiled into the binary (cmake/embed_files.cmake), served with a strict Content-Security-
// Policy. The page holds no secrets and talks to the server only through the public API, so it
// is served without the API key; the user types the key into the page, which sends it as Bearer.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::server {

// One file of src/server/web/, by its name there ("index.html", "app.js").
struct EmbeddedFile {
  std::string_view name;
  std::string_view bytes;
};

// Every embedded file (defined in the source generated at build time).
const std::vector<EmbeddedFile>& embedded_web_files();

struct WebAsset {
  std::string_view content_type;
  std::string_view body;
};

// The URL path a file is served at: "/" for index.html, "/NAME" for the others.
std::string web_path(std::string_view file_name);

// The asset served at a URL path; nothing for any other path.
std::optional<WebAsset> find_web_asset(std::string_view path);

// The Content-Type for a file name, from its extension (text types say UTF-8). Throws
// lumen::Error for an extension the page does not use (a new file needs its type here).
std::string_view web_content_type(std::string_view file_name);

// The page's Content-Security-Policy: only its own script, style and API (no inline code, no
// other origin, no framing), so model text that slipped past the page's escaping still could
// not run or send anything anywhere.
inline constexpr std::string_view kWebContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace lumen::server
