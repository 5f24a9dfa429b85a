#!/usr/bin/env bash
# Runs COMMAND with a throwaway PostgreSQL server: a cluster made with initdb in a
# temporary directory, listening on a Unix socket there (trusted) and on a free port of
# 127.0.0.1 (TLS with a certificate of a throwaway authority, and a password, SCRAM),
# stopped and removed when COMMAND ends. COMMAND sees its connection string in
# CAIRNLOOP_POSTGRES, and in CAIRNLOOP_POSTGRES_PASSWORD a URL for the role `gateway`,
# which signs in with a password over verified TLS only and owns the database
# `cairnloop_gateway` (its password alone in CAIRNLOOP_POSTGRES_SECRET, for tests that
# check it is never shown; the authority's certificate in CAIRNLOOP_POSTGRES_CA, and
# another authority's, which the server's certificate does not chain to, in
# CAIRNLOOP_POSTGRES_STRANGER_CA).
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
"${as_owner[@]}" "$bindir/initdb" -D "$dir/data" --auth-local=trust --auth-host=scram-sha-256 \
  -U postgres --no-sync >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# A throwaway authority, the server's certificate for 127.0.0.1 signed by it, and a
# stranger authority. The role `gateway` comes in over TLS only.
tls() { openssl "$@" >/dev/null 2>&1; }
tls req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=cairnloop-test-ca \
  -keyout "$dir/ca.key" -out "$dir/ca.pem"
tls req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=stranger-ca \
  -keyout "$dir/stranger.key" -out "$dir/stranger.pem"
tls req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
  -keyout "$dir/data/server.key" -out "$dir/server.csr"
printf 'subjectAltName=IP:127.0.0.1\n' > "$dir/san.ext"
tls x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
  -extfile "$dir/san.ext" -out "$dir/data/server.crt"
chmod 600 "$dir/data/server.key"
chmod 644 "$dir/ca.pem" "$dir/stranger.pem"
[ "$(id -u)" = 0 ] && chown postgres "$dir/data/server.key" "$dir/data/server.crt"
{
  printf 'hostnossl all gateway 127.0.0.1/32 reject\n'
  cat "$dir/data/pg_hba.conf"
} > "$dir/pg_hba.conf" && cp "$dir/pg_hba.conf" "$dir/data/pg_hba.conf"
stop() {
  "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
# Four processes with a pool of 32 each, a console and a listener, with room to spare.
options="-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=$fsync -c max_connections=200 -c ssl=on"
if ! "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "$options" start >/dev/null; then
  # The log goes with the directory when this script ends: say why first.
  echo "with_postgres.sh: the server did not start; its log:" >&2
  cat "$dir/server.log" >&2 || true
  exit 1
fi
secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')
if ! "${as_owner[@]}" "$bindir/createdb" -h "$dir" -p "$port" -U postgres cairnloop \
  || ! "${as_owner[@]}" "$bindir/psql" -q -h "$dir" -p "$port" -U postgres -d cairnloop \
    -c "CREATE ROLE gateway LOGIN PASSWORD '$secret'" \
  || ! "${as_owner[@]}" "$bindir/createdb" -h "$dir" -p "$port" -U postgres -O gateway cairnloop_gateway; then
  echo "with_postgres.sh: creating the databases failed; the server's log:" >&2
  cat "$dir/server.log" >&2 || true
  exit 1
fi
export CAIRNLOOP_POSTGRES="host=$dir port=$port user=postgres dbname=cairnloop"
export CAIRNLOOP_POSTGRES_PASSWORD="postgres://gateway:$secret@127.0.0.1:$port/cairnloop_gateway?sslmode=verify-full&sslrootcert=$dir/ca.pem"
export CAIRNLOOP_POSTGRES_SECRET="$secret"
export CAIRNLOOP_POSTGRES_CA="$dir/ca.pem"
export CAIRNLOOP_POSTGRES_STRANGER_CA="$dir/stranger.pem"
# For a test that stops the server mid-run and starts it again.
export CAIRNLOOP_POSTGRES_STOP="${as_owner[*]} $bindir/pg_ctl -D $dir/data -m fast -w stop"
export CAIRNLOOP_POSTGRES_START="${as_owner[*]} $bindir/pg_ctl -D $dir/data -l $dir/server.log -w -o '$options' start"
"$@"
