#!/usr/bin/env python3
"""kv.py METHOD PORT [KEY [VALUE]]: a client for the local server."""
import json
import sys
import urllib.request
from urllib.parse import quote

method, port = sys.argv[1], sys.argv[2]
key = sys.argv[3] if len(sys.argv) > 3 else ""
url = "http://127.0.0.1:%s/kv/%s" % (port, quote(key, safe=""))
data = sys.argv[4].encode() if len(sys.argv) > 4 else None
if method == "FLUSH":
    method, url = "DELETE", "http://127.0.0.1:%s/kv?prefix=%s" % (port, quote(key))
req = urllib.request.Request(url, data=data, method=method)
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        print(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.read().decode())
    sys.exit(1)
