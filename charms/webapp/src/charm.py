#!/usr/bin/env python3
"""webapp charm in the style of ops: one class, one handler per event,
hook tools called through subprocess with --format=json."""
import json
import os
import signal
import subprocess
import sys
import time

CHARM_DIR = os.environ["JUJU_CHARM_DIR"]


def tool(*args, stdin=None, check=True):
    r = subprocess.run(list(args), input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (args[0], r.stderr.strip()))
    return r.stdout


def tool_json(*args):
    out = tool(*args, "--format=json")
    return json.loads(out) if out.strip() else None


class WebappCharm:
    def __init__(self):
        self.unit = os.environ["JUJU_UNIT_NAME"]
        self.config = tool_json("config-get")
        self.pidfile = os.path.join(CHARM_DIR, "web.pid")
        self.whyfile = os.path.join(CHARM_DIR, "web.why")  # why the last start failed
        self.sitefile = os.path.join(CHARM_DIR, "site.json")

    # --- helpers -------------------------------------------------------
    def log(self, msg):
        tool("juju-log", "--log-level", "INFO", "--", msg)

    def status(self, st, msg):
        tool("status-set", st, "--", msg)

    def running(self):
        try:
            with open(self.pidfile) as f:
                os.kill(int(f.read()), 0)
            return True
        except (OSError, ValueError):
            return False

    def backend(self):
        """The kvstore URL from the db relation: the app bag's primary, or
        the first unit's host/port."""
        for rid in tool_json("relation-ids", "db") or []:
            app = tool_json("relation-list", "-r", rid, "--app")
            if app:
                bag = tool_json("relation-get", "-r", rid, "--app", "-", app) or {}
                if bag.get("primary-url"):
                    return bag["primary-url"], bag.get("primary", app)
            for unit in tool_json("relation-list", "-r", rid) or []:
                bag = tool_json("relation-get", "-r", rid, "-", unit) or {}
                if bag.get("host") and bag.get("port"):
                    return "http://%s:%s" % (bag["host"], bag["port"]), unit
        return None, None

    def write_site(self):
        backend, via = self.backend()
        site = {"title": self.config.get("title", ""), "backend": backend, "via": via}
        tmp = self.sitefile + ".tmp"
        with open(tmp, "w") as f:
            json.dump(site, f)
        os.replace(tmp, self.sitefile)
        return site

    def started(self):
        return tool("state-get", "started", check=False).strip() == "true"

    def start_server(self):
        """Start the web server; False, with the reason kept for report,
        if it does not come up (its port taken, most likely)."""
        if self.running():
            return True
        port = str(self.config["port"])
        logfile = os.path.join(CHARM_DIR, "web.log")
        ready = os.path.join(CHARM_DIR, "web.ready")  # written by the server once it listens
        if os.path.exists(ready):
            os.remove(ready)
        with open(logfile, "a") as log:
            p = subprocess.Popen([sys.executable, os.path.join(CHARM_DIR, "src", "web.py"), port, self.sitefile],
                                 stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
                                 env=dict(os.environ, READY_FILE=ready))
        with open(self.pidfile, "w") as f:
            f.write(str(p.pid))
        for _ in range(100):
            if p.poll() is not None:
                break
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                if os.path.exists(self.whyfile):
                    os.remove(self.whyfile)
                return True
            time.sleep(0.1)
        with open(logfile) as f:
            tail = f.read()[-2000:]
        why = ("port %s is in use by another process" % port if "Address already in use" in tail
               else "web server did not come up on port %s" % port)
        with open(self.whyfile, "w") as f:
            f.write(why)
        tool("juju-log", "--log-level", "ERROR", "--", "%s (see %s)" % (why, logfile))
        self.stop_server()
        return False

    def stop_server(self):
        try:
            with open(self.pidfile) as f:
                os.kill(int(f.read()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
        try:
            os.remove(self.pidfile)
        except OSError:
            pass

    def publish(self):
        addr = tool("unit-get", "private-address").strip()
        url = "http://%s:%s" % (addr, self.config["port"])
        for rid in tool_json("relation-ids", "db") or []:
            tool("relation-set", "-r", rid, "--file", "-", stdin=json.dumps({"client-url": url, "title": self.config["title"]}))

    def report(self):
        site = self.write_site()
        if not self.running():
            try:
                with open(self.whyfile) as f:
                    why = f.read().strip()
            except OSError:
                why = "web server not running"
            self.status("blocked", why)
        elif site["backend"]:
            self.status("active", "serving %s from %s" % (site["title"], site["via"]))
        else:
            self.status("blocked", "waiting for a kvstore relation")

    # --- events --------------------------------------------------------
    def on_install(self):
        self.status("maintenance", "installing webapp")

    def on_config_changed(self):
        prev = tool("state-get", "port").strip()
        port = str(self.config["port"])
        if prev and prev != port:
            self.stop_server()
            tool("close-port", prev + "/tcp")
        tool("state-set", "--file", "-", stdin=json.dumps({"port": port}))
        tool("open-port", port + "/tcp")
        self.publish()
        if self.started():
            self.write_site()
            self.start_server()
            self.report()

    def on_start(self):
        tool("state-set", "started=true")
        self.write_site()
        self.start_server()
        self.report()

    def on_db_relation_changed(self):
        self.publish()
        self.report()

    on_db_relation_joined = on_db_relation_changed
    on_db_relation_departed = on_db_relation_changed

    def on_update_status(self):
        if self.started():
            self.write_site()
            self.start_server()  # it died, or its port was taken
        self.report()

    def on_db_relation_broken(self):
        # The relation is still listed during -broken; the site forgets it.
        site = {"title": self.config.get("title", ""), "backend": None, "via": None}
        with open(self.sitefile, "w") as f:
            json.dump(site, f)
        self.status("blocked", "waiting for a kvstore relation")

    def on_stop(self):
        self.stop_server()


def main():
    path = os.environ["JUJU_DISPATCH_PATH"]
    kind, name = path.split("/", 1)
    event = name.replace("-", "_") + ("_action" if kind == "actions" else "")
    charm = WebappCharm()
    handler = getattr(charm, "on_" + event, None)
    if handler is not None:  # unknown events are ignored, as ops does
        handler()
    if os.environ.get("JUJU_HOOK_NAME"):
        with open(os.path.join(CHARM_DIR, "hooks.log"), "a") as f:
            f.write("%s %s\n" % (os.environ["JUJU_HOOK_NAME"], os.environ.get("JUJU_REMOTE_UNIT", "")))


if __name__ == "__main__":
    main()
