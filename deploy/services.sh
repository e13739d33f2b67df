#!/usr/bin/env bash
# What `make up` needs on this machine before the topology starts: Varnish (Debian's varnish and
# varnish-modules, for xkey), and -- when DATABASE_URL / REDIS_URL are unset or point here --
# local PostgreSQL and Redis, started the way .ci/run starts them.
set -euo pipefail

DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/repojournal}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/1}"

apt_install() {
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_varnish() {
  if ! command -v varnishd >/dev/null || ! ls /usr/lib/*/varnish/vmods/libvmod_xkey.so >/dev/null 2>&1; then
    apt_install varnish varnish-modules
  fi
  # Debian's package starts a system Varnish on :6081; the topology runs its own.
  if command -v systemctl >/dev/null && systemctl is-active --quiet varnish 2>/dev/null; then
    systemctl disable --now varnish >/dev/null 2>&1 || true
  fi
}

ensure_postgres() {
  case "$DATABASE_URL" in
    postgres://*@127.0.0.1:5432/*|postgres://*@localhost:5432/*|postgresql://*@127.0.0.1:5432/*) ;;
    *) return 0 ;;  # a managed or remote database: not ours to start
  esac
  local name="${DATABASE_URL##*/}"; name="${name%%\?*}"
  command -v pg_ctlcluster >/dev/null || apt_install postgresql
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$name'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE \"$name\""
}

ensure_redis() {
  case "$REDIS_URL" in
    redis://127.0.0.1:6379*|redis://localhost:6379*) ;;
    *) return 0 ;;
  esac
  command -v redis-server >/dev/null || apt_install redis-server
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
  fi
}

case "${1:-all}" in
  varnish) ensure_varnish ;;
  all) ensure_varnish; ensure_postgres; ensure_redis ;;
  *) echo "usage: $0 [all|varnish]" >&2; exit 2 ;;
esac
