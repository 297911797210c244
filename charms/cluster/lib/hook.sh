#!/bin/bash
# Every cluster hook. The leader computes the member list from the peer
# relation and publishes it in the peer application bag; followers report
# the list the leader published.
set -eu
cd "$CHARM_DIR"
name=$(basename "$0")

peer_rid() { relation-ids peers | head -n1; }

publish_members() {
  local rid members
  rid=$(peer_rid)
  [ -n "$rid" ] || return 0
  relation-set -r "$rid" address="$(unit-get private-address)"
  [ "$(is-leader)" = "True" ] || return 0
  members=$( { echo "$JUJU_UNIT_NAME"; relation-list -r "$rid"; } | grep . | sort | paste -sd, -)
  relation-set -r "$rid" --app members="$members" leader="$JUJU_UNIT_NAME" cluster-name="$(config-get cluster-name)"
}

report() {
  local rid members n
  rid=$(peer_rid)
  if [ -z "$rid" ]; then
    status-set waiting "no peer relation yet"
    return 0
  fi
  members=$(relation-get -r "$rid" --app members "${JUJU_UNIT_NAME%/*}" || true)
  if [ -z "$members" ]; then
    status-set waiting "waiting for the leader to publish the cluster"
    return 0
  fi
  n=$(tr ',' '\n' <<<"$members" | grep -c .)
  if [ "$(is-leader)" = "True" ]; then
    status-set active "leader of $n"
  else
    status-set active "member of $n"
  fi
}

case "$name" in
install) status-set maintenance "installing" ;;
leader-elected | config-changed | peers-relation-created | peers-relation-joined | peers-relation-departed | peers-relation-changed | leader-settings-changed | start | update-status)
  publish_members
  report
  ;;
esac
echo "$JUJU_HOOK_NAME ${JUJU_REMOTE_UNIT:-}" >>"$CHARM_DIR/hooks.log"
