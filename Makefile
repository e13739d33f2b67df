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

demo: migrate
	$(BIN)/python manage.py import_seeds

run: demo
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

test: install
	$(BIN)/python -m pytest

superuser: migrate
	$(BIN)/python manage.py createsuperuser

worker: install
	DJANGO_SETTINGS_MODULE=$${DJANGO_SETTINGS_MODULE:-repojournal.settings.dev} $(BIN)/celery -A repojournal worker -B --loglevel=info

clean:
	rm -rf $(VENV) db.sqlite3 .pytest_cache
