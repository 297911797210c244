#!/usr/bin/env bash
# Installs the system packages Drover's tests and `make dev` use, when they
# are missing: PostgreSQL server binaries (a private server is started from
# them; nothing runs as a system service).
set -euo pipefail

have_pg() {
	command -v postgres >/dev/null 2>&1 && return 0
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1
}

if ! have_pg; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "PostgreSQL server binaries not found; install them (e.g. apt-get install postgresql) and re-run." >&2
		exit 1
	fi
	echo "deps: installing PostgreSQL from Debian's packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
if ! id postgres >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	useradd --system --home /var/lib/postgresql --shell /bin/bash postgres
fi
go mod download
