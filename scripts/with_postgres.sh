#!/usr/bin/env bash
# Runs COMMAND with a throwaway PostgreSQL server: a cluster made with initdb in a
# temporary directory, listening only on a Unix socket there, stopped and removed when
# COMMAND ends. COMMAND sees its connection string in CAIRNLOOP_POSTGRES.
# initdb and postgres refuse to run as root: as root, they run as the `postgres` user.
# Usage: scripts/with_postgres.sh [--fsync] COMMAND [ARG...]
# Without --fsync the server runs with fsync=off (tests: fast, and a crash of the test
# machine loses nothing that matters); with it, as a deployment would (benchmarks).
set -euo pipefail
fsync=off
if [ "${1:-}" = "--fsync" ]; then
  fsync=on
  shift
fi
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ]; then
  echo "with_postgres.sh: no PostgreSQL server found (apt-get install postgresql)" >&2
  exit 1
fi
dir=$(mktemp -d /tmp/cairnloop-pg.XXXXXX)
as_owner=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$dir"
  as_owner=(runuser -u postgres --)
fi
"${as_owner[@]}" "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
stop() {
  "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
# Four processes with a pool of 32 each, a console and a listener, with room to spare.
options="-k $dir -c listen_addresses= -c fsync=$fsync -c max_connections=200"
if ! "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "$options" start >/dev/null; then
  # The log goes with the directory when this script ends: say why first.
  echo "with_postgres.sh: the server did not start; its log:" >&2
  cat "$dir/server.log" >&2 || true
  exit 1
fi
if ! "${as_owner[@]}" "$bindir/createdb" -h "$dir" -U postgres cairnloop; then
  echo "with_postgres.sh: createdb failed; the server's log:" >&2
  cat "$dir/server.log" >&2 || true
  exit 1
fi
export CAIRNLOOP_POSTGRES="host=$dir user=postgres dbname=cairnloop"
# For a test that stops the server mid-run and starts it again.
export CAIRNLOOP_POSTGRES_STOP="${as_owner[*]} $bindir/pg_ctl -D $dir/data -m fast -w stop"
export CAIRNLOOP_POSTGRES_START="${as_owner[*]} $bindir/pg_ctl -D $dir/data -l $dir/server.log -w -o '$options' start"
"$@"
