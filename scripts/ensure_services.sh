#!/usr/bin/env bash
# Start local Postgres and Redis if they are not answering, and install the
# Debian packages the tests need. Safe to run repeatedly.
set -euo pipefail

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v pg_isready >/dev/null 2>&1 || need_apt+=(postgresql postgresql-client)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
# The console's browser tests drive Debian's Chromium through Playwright (its own download is not used).
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# The compose file is validated by the tests (no container engine needed for that).
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || need_apt+=(docker-compose)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  echo "starting Postgres"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
fi
redis-cli -h 127.0.0.1 -p 6379 ping

# The database `make test` migrates (the test suite makes its own per-run databases too).
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='trajforge'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE trajforge"
