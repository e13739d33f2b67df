# RepoJournal: `make run` sets everything up and serves the site; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
INSTALLED := $(VENV)/.installed

.PHONY: run test install migrate demo superuser worker clean

$(INSTALLED): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(INSTALLED)

install: $(INSTALLED)

migrate: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py refresh_cards --missing
	$(BIN)/python manage.py refresh_digests --missing

demo: migrate
	$(BIN)/python manage.py import_seeds

# The site and, beside it, beat's schedule (manage.py run_schedule: each due task inline, as tasks run
# here without REDIS_URL; with it, the command exits and `make worker`'s beat runs the schedule).
# Stopping the server (Ctrl-C) stops the scheduler.
run: demo
	$(BIN)/python manage.py run_schedule & scheduler=$$!; \
	trap 'kill $$scheduler 2>/dev/null; wait $$scheduler' EXIT; trap 'exit 130' INT; trap 'exit 143' TERM; \
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

# The suite on every core (pytest-xdist): tests sharing a started topology or stack run on one worker
# (tests/conftest.py, PROCESS_GROUPS). TEST_WORKERS=0 runs it in this one process. The 30 slowest tests
# are listed at the end, so where the time goes is in every CI log.
TEST_WORKERS ?= auto
test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=30

superuser: migrate
	$(BIN)/python manage.py createsuperuser

worker: install
	$(BIN)/celery -A repojournal worker -B --loglevel=info  # dev settings unless DJANGO_SETTINGS_MODULE says otherwise

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-wal db.sqlite3-shm db.sqlite3-cache .pytest_cache

# Benchmarks (issue 6): `make bench` (full; writes bench/results.json and docs/benchmarks.md),
# `make bench QUICK=1` or `make bench-quick` (CI: tiny scale, short runs, results in $TMPDIR).
# Needs PostgreSQL and Redis running; BENCH_ARGS passes options, e.g. BENCH_ARGS="--scale 0.2".
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/bench
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/7
.PHONY: bench bench-quick

bench: install
	command -v wrk >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk)
	DATABASE_URL=$(BENCH_DATABASE_URL) REDIS_URL=$(BENCH_REDIS_URL) $(BIN)/python -m bench $(if $(QUICK),--quick) $(BENCH_ARGS)

bench-quick:
	$(MAKE) bench QUICK=1

# The production topology on this machine (issue 16, docs/deployment.md): Varnish on 127.0.0.1:8080
# in front of two gunicorn instances, two Celery workers and one beat, under supervisord.
# DATABASE_URL / REDIS_URL are respected; defaults: local PostgreSQL db "repojournal", Redis db 1.
# REPLICAS=1 also starts a streaming replica of that PostgreSQL on port 5433 (REPLICA_PORT) and has
# readers' reads served from it (deploy/replica.py, docs/deployment.md "Read replicas"); `make down` stops it.
.PHONY: up down status manage
up: install
	deploy/services.sh
	$(BIN)/python deploy/topology.py up

down:
	$(BIN)/python deploy/topology.py down

status:
	$(BIN)/python deploy/topology.py status

# Backups (docs/deployment.md "Backups"): the database named by DATABASE_URL (default: the topology's),
# the image files and the topology's secret key, into BACKUP_DIR (default var/backups/); `make restore`
# restores the newest there, or FROM=<folder>, into an empty database (FORCE=1: over an existing one).
.PHONY: backup restore
backup: install
	$(BIN)/python deploy/backup.py backup

restore: install
	$(BIN)/python deploy/backup.py restore $(if $(FROM),--from "$(FROM)") $(if $(FORCE),--force)

# Any management command with the topology's environment, e.g. make manage ARGS="shell" or
# make manage ARGS="purge_edge --all" (production settings, its database, Redis and edge).
manage: install
	$(BIN)/python deploy/topology.py manage $(ARGS)
