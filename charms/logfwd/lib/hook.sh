#!/bin/bash
# Every logfwd hook: copy new lines of the principal's log into
# forwarded.log (tracking the offset in state), then report.
set -eu
cd "$CHARM_DIR"
name=$(basename "$0")
principal=${JUJU_PRINCIPAL_UNIT:-}

forward() {
  [ -n "$principal" ] || return 0
  local src offset size
  src="$CHARM_DIR/../../unit-${principal/\//-}/charm/$(config-get source-file)"
  [ -f "$src" ] || return 0
  offset=$(cat .offset 2>/dev/null || echo 0)
  size=$(stat -c %s "$src")
  if [ "$size" -lt "$offset" ]; then offset=0; fi
  tail -c +"$((offset + 1))" "$src" | head -c "$((size - offset))" | sed "s|^|$principal: |" >>forwarded.log
  echo "$size" >.offset
}

report() {
  local n
  n=$(grep -c . forwarded.log 2>/dev/null || true)
  status-set active "forwarding ${principal:-nothing} (${n:-0} lines)"
}

case "$name" in
install) : >>forwarded.log ;;
remove | stop) ;;
*)
  forward
  report
  ;;
esac
echo "$JUJU_HOOK_NAME ${JUJU_REMOTE_UNIT:-}" >>"$CHARM_DIR/hooks.log"
