#!/bin/bash
# Every kvstore hook: dispatch on the hook (or action) name.
set -eu
cd "$CHARM_DIR"
name=$(basename "$0")
port=$(config-get port)
pidfile="$CHARM_DIR/server.pid"
whyfile="$CHARM_DIR/server.why" # why the last start failed

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

start_server() {
  running && return 0
  local ready="$CHARM_DIR/server.ready" # written by the server once it listens
  rm -f "$ready"
  READY_FILE="$ready" setsid nohup python3 "$CHARM_DIR/lib/server.py" "$1" "$CHARM_DIR/data.json" >>"$CHARM_DIR/server.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 100); do
    running || break
    [ -s "$ready" ] && { rm -f "$whyfile"; return 0; }
    sleep 0.1
  done
  if tail -n 5 "$CHARM_DIR/server.log" | grep -q "Address already in use"; then
    echo "port $1 is in use by another process" >"$whyfile"
  else
    echo "server did not come up on port $1" >"$whyfile"
  fi
  juju-log -l ERROR "$(cat "$whyfile") (see $CHARM_DIR/server.log)"
  stop_server
  return 1
}

stop_server() {
  if running; then kill "$(cat "$pidfile")"; fi
  rm -f "$pidfile"
}

publish() { # publish host/port on every kv relation (and the primary, as leader)
  local addr
  addr=$(unit-get private-address)
  for rid in $(relation-ids kv); do
    relation-set -r "$rid" host="$addr" port="$port"
    if [ "$(is-leader)" = "True" ]; then
      relation-set -r "$rid" --app primary="$JUJU_UNIT_NAME" primary-url="http://$addr:$port"
    fi
  done
}

clients() { # count related client units
  local n=0
  for rid in $(relation-ids kv); do
    n=$((n + $(relation-list -r "$rid" | grep -c . || true)))
  done
  echo "$n"
}

report() {
  if running; then
    status-set active "serving on port $port ($(clients) clients)"
  elif [ -f "$whyfile" ]; then
    status-set blocked "$(cat "$whyfile")"
  else
    status-set blocked "server not running"
  fi
}

started() { [ "$(state-get started || true)" = true ]; }

serving() { # actions need the server
  running || { action-fail "the server is not running"; exit 0; }
}

case "$name" in
install)
  status-set maintenance "installing"
  command -v python3 >/dev/null
  ;;
config-changed)
  old=$(state-get port || true)
  if [ -n "$old" ] && [ "$old" != "$port" ]; then
    stop_server
    close-port "$old/tcp"
  fi
  state-set port="$port"
  open-port "$port/tcp"
  publish
  if started; then
    start_server "$port" || true
    report
  fi
  ;;
start)
  state-set started=true
  start_server "$port" || true # report says why it is not serving
  open-port "$port/tcp"
  application-version-set "1.0"
  report
  ;;
leader-elected)
  publish
  ;;
kv-relation-joined | kv-relation-changed)
  publish
  if [ -n "${JUJU_REMOTE_UNIT:-}" ]; then
    url=$(relation-get client-url "$JUJU_REMOTE_UNIT" || true)
    if [ -n "$url" ] && running; then
      python3 lib/kv.py PUT "$port" "client:$JUJU_REMOTE_UNIT" "$url" >/dev/null
    fi
  fi
  report
  ;;
kv-relation-departed)
  if running; then python3 lib/kv.py DELETE "$port" "client:$JUJU_REMOTE_UNIT" >/dev/null || true; fi
  report
  ;;
update-status)
  if started; then start_server "$port" || true; fi # it died, or its port was taken
  report
  ;;
stop)
  stop_server
  ;;
get)
  serving
  key=$(action-get key)
  out=$(python3 lib/kv.py GET "$port" "$key") || { action-fail "key $key not found"; exit 0; }
  action-set value="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["value"])' <<<"$out")"
  ;;
set)
  serving
  key=$(action-get key)
  value=$(action-get value)
  action-log "setting $key"
  python3 lib/kv.py PUT "$port" "$key" "$value" >/dev/null
  action-set stored=true
  ;;
flush)
  serving
  prefix=$(action-get prefix)
  out=$(python3 lib/kv.py FLUSH "$port" "$prefix")
  action-set deleted="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["deleted"])' <<<"$out")"
  ;;
esac
# Record the hook for tests and debugging (actions are not hooks).
if [ -n "${JUJU_HOOK_NAME:-}" ]; then
  echo "$JUJU_HOOK_NAME ${JUJU_REMOTE_UNIT:-}" >>"$CHARM_DIR/hooks.log"
fi
