#!/usr/bin/env bash
# Installs the system packages Drover's tests and `make dev` use, when they
# are missing: PostgreSQL server binaries (a private server is started from
# them; nothing runs as a system service), Node.js and npm (the dashboard's
# build) and Chromium (the browser tests, tests/browser_test.go). Without
# root it names what is missing and what to install.
set -euo pipefail

have_pg() {
	command -v postgres >/dev/null 2>&1 && return 0
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1
}

missing=()
have_pg || missing+=(postgresql)
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing Debian packages: ${missing[*]}; install them (apt-get install ${missing[*]}) and re-run." >&2
		# PostgreSQL and Node are needed by every test run; Chromium only
		# by the browser tests, which skip without it.
		for p in "${missing[@]}"; do
			[ "$p" = chromium ] || exit 1
		done
	else
		echo "deps: installing ${missing[*]} from Debian's packages"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# Chromium with its recommended packages (fonts): pages render as
		# users see them.
		apt-get install -y -qq "${missing[@]}" >/dev/null
	fi
fi
if ! id postgres >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	useradd --system --home /var/lib/postgresql --shell /bin/bash postgres
fi
go mod download
