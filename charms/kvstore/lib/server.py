#!/usr/bin/env python3
"""A tiny HTTP key-value server: GET/PUT/DELETE /kv/<key>, GET /kv (all as
JSON), DELETE /kv?prefix=p (flush). Data is kept in a JSON file."""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

DATA = sys.argv[2]
LOCK = threading.Lock()


def load():
    try:
        with open(DATA) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save(d):
    tmp = DATA + ".tmp"
    with open(tmp, "w") as f:
        json.dump(d, f)
    os.replace(tmp, DATA)


class Handler(BaseHTTPRequestHandler):
    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def key(self):
        path = urlparse(self.path).path
        if path == "/kv" or path == "/kv/":
            return ""
        if path.startswith("/kv/"):
            return unquote(path[4:])
        return None

    def do_GET(self):
        k = self.key()
        if k is None:
            return self.reply(200, {"status": "ok"})
        with LOCK:
            d = load()
        if k == "":
            return self.reply(200, d)
        if k not in d:
            return self.reply(404, {"error": "not found"})
        return self.reply(200, {"key": k, "value": d[k]})

    def do_PUT(self):
        k = self.key()
        if not k:
            return self.reply(400, {"error": "key required"})
        n = int(self.headers.get("Content-Length") or 0)
        value = self.rfile.read(n).decode()
        with LOCK:
            d = load()
            d[k] = value
            save(d)
        return self.reply(200, {"key": k, "value": value})

    def do_DELETE(self):
        k = self.key()
        prefix = parse_qs(urlparse(self.path).query).get("prefix", [""])[0]
        with LOCK:
            d = load()
            if k:
                gone = 1 if d.pop(k, None) is not None else 0
            else:
                keys = [x for x in d if x.startswith(prefix)]
                for x in keys:
                    del d[x]
                gone = len(keys)
            save(d)
        return self.reply(200, {"deleted": gone})

    def log_message(self, fmt, *args):
        sys.stderr.write("kvstore: " + fmt % args + "\n")


if __name__ == "__main__":
    server = ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Handler)
    # Listening: say so where the charm looks (another process answering
    # on the port is not this server).
    if os.environ.get("READY_FILE"):
        with open(os.environ["READY_FILE"], "w") as f:
            f.write(str(os.getpid()))
    server.serve_forever()
