#!/usr/bin/env python3
"""The webapp workload: GET / renders the kvstore's keys as HTML, GET
/data returns them as JSON. The backend URL and title are re-read from
site.json on every request, so the charm reconfigures it by rewriting it."""
import html
import json
import os
import sys
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SITE = sys.argv[2]


def site():
    try:
        with open(SITE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        s = site()
        backend = s.get("backend")
        data, err = {}, None
        if backend:
            try:
                with urllib.request.urlopen(backend + "/kv", timeout=5) as r:
                    data = json.load(r)
            except Exception as e:  # the page says what went wrong
                err = str(e)
        else:
            err = "no kvstore related"
        if self.path.startswith("/data"):
            body = json.dumps({"title": s.get("title"), "backend": backend, "data": data, "error": err}).encode()
            ctype = "application/json"
        else:
            rows = "".join("<tr><td>%s</td><td>%s</td></tr>" % (html.escape(k), html.escape(str(v))) for k, v in sorted(data.items()))
            body = ("<html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p><table>%s</table></body></html>" % (
                html.escape(s.get("title", "")), html.escape(s.get("title", "")), html.escape(err or "backend: " + backend), rows)).encode()
            ctype = "text/html"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Handler)
    # Listening: say so where the charm looks (another process answering
    # on the port is not this server).
    if os.environ.get("READY_FILE"):
        with open(os.environ["READY_FILE"], "w") as f:
            f.write(str(os.getpid()))
    server.serve_forever()
