"""The chat page's files as `lumen serve` sends them: at /, /app.js and /app.css with their
content types, the Content-Security-Policy and nosniff; only to GET; without the API key (the page
is static and asks the user for the key); and not at all with --no-web-ui. Other paths still 404."""
from conftest import httpx, LumenServer

POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
TYPES = {"/": "text/html; charset=utf-8", "/app.js": "text/javascript; charset=utf-8",
         "/images.js": "text/javascript; charset=utf-8", "/markdown.js": "text/javascript; charset=utf-8",
         "/storage.js": "text/javascript; charset=utf-8",
         "/app.css": "text/css; charset=utf-8"}


def test_page_files_types_policy_and_key():
    server = LumenServer(api_key="page-test-key")
    try:
        for path, content_type in TYPES.items():
            r = httpx.get(server.base_url + path, timeout=10)  # no key: the page must load
            assert r.status_code == 200, (path, r.text)
            assert r.headers["Content-Type"] == content_type
            assert r.headers["Content-Security-Policy"] == POLICY
            assert r.headers["X-Content-Type-Options"] == "nosniff"
            assert r.content, path
        page = httpx.get(server.base_url + "/", timeout=10).text
        assert '<script src="/app.js"' in page and 'href="/app.css"' in page
        assert httpx.head(server.base_url + "/", timeout=10).status_code == 200

        # Everything else is as before: the API needs the key, unknown paths 404.
        assert httpx.get(server.base_url + "/v1/models", timeout=10).status_code == 401
        for path in ("/index.html", "/app.js.map", "/favicon.ico", "/web/app.js"):
            r = httpx.get(server.base_url + path, timeout=10)
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path
            assert "Content-Security-Policy" not in r.headers
        r = httpx.post(server.base_url + "/", json={}, headers={"Authorization": "Bearer page-test-key"}, timeout=10)
        assert r.status_code == 405 and r.headers["Allow"] == "GET"
    finally:
        assert server.stop() == 0, "".join(server.log)

    server = LumenServer("--no-web-ui")
    try:
        for path in TYPES:
            r = httpx.get(server.base_url + path, timeout=10)
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path
        assert httpx.post(server.base_url + "/", json={}, timeout=10).status_code == 404
        assert httpx.get(server.base_url + "/health", timeout=10).status_code == 200
        assert not any("chat page" in line for line in server.log)
    finally:
        assert server.stop() == 0, "".join(server.log)
