# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint serve-prod bench-smoke clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,bench]"
	touch $(STAMP)

install: $(STAMP)

# Serve the inspector on the demo world with the embedded SQLite default.
run: $(STAMP)
	mkdir -p var
	OMNIA_DEBUG=1 $(PY) manage.py migrate --no-input -v0
	OMNIA_DEBUG=1 $(PY) manage.py load_demo --if-empty
	OMNIA_DEBUG=1 $(PY) manage.py run_projections
	OMNIA_DEBUG=1 $(PY) manage.py ensure_login --username designer --password omnia-demo
	@echo ""
	@echo "  Omnia Memory Inspector: http://$(HOST):$(PORT)/"
	@echo "  Log in as designer / omnia-demo (admin role: edits aliases, runs and rebuilds projections)."
	@echo ""
	OMNIA_DEBUG=1 $(PY) manage.py runserver $(HOST):$(PORT)

# The whole suite, browser tests included (Debian's Chromium, see .ci/run).
test: $(STAMP)
	mkdir -p var test-artifacts
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	OMNIA_TESTING=1 $(PY) manage.py makemigrations --check --dry-run -v0
	$(PY) -m pytest -p xdist -n 2 $(PYTEST_ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

# Production-like server: DEBUG off, manifest static files, gunicorn.
serve-prod: $(STAMP)
	$(PY) manage.py collectstatic --no-input -v0
	$(PY) manage.py migrate --no-input -v0
	OMNIA_DB_CONN_MAX_AGE=$${OMNIA_DB_CONN_MAX_AGE:-60} $(VENV)/bin/gunicorn omnia_site.wsgi --workers $${WEB_CONCURRENCY:-4} --bind $(HOST):$(PORT)

bench-smoke: $(STAMP)
	for script in bench/bench_*.py; do $(PY) $$script --smoke || exit 1; done

clean:
	rm -rf $(VENV) var test-artifacts
