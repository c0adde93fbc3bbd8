# quicexp — `make help` lists the targets. Prerequisites: Python 3.11, Java 17, make.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY      := .venvs/pipeline/bin/python
QUICEXP := .venvs/pipeline/bin/quicexp
PYTEST_ARGS ?=
DAYS    ?= 3
CLIENTS ?= 4000
SIZE    ?= 1000000

.PHONY: help setup lock demo test test-fast lint bench clean

help: ## Show this help
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

setup: ## Install the three environments from their locks, fetch the jars, make the JVM class archive (idempotent)
	@scripts/setup.sh

lock: ## Re-resolve requirements/*.in into the committed lock files
	@for env in pipeline airflow superset; do \
	  uv pip compile --quiet --python-version 3.11 --python-platform x86_64-unknown-linux-gnu \
	    requirements/$$env.in -o requirements/$$env.lock || exit 1; done

demo: setup ## Simulate a few days of the FHOL experiment and run the whole pipeline on them
	@$(QUICEXP) demo --days $(DAYS) --clients $(CLIENTS)

test: setup ## Run the whole test suite (starts Spark, dbt, Airflow, Thrift, Superset for real)
	@scripts/test.sh $(PYTEST_ARGS)

test-fast: setup ## Run the tests that need no JVM or service (marked by tests/conftest.py; a JVM start fails them)
	@$(PY) -m pytest -m "not spark and not e2e and not slow" $(PYTEST_ARGS)

lint: setup ## ruff over the Python code, and the import-linter layer contracts (pyproject.toml)
	@.venvs/pipeline/bin/ruff check quicexp jobs reports stats simulation lab dags bench tests
	@.venvs/pipeline/bin/lint-imports --no-cache

bench: setup ## Benchmarks at SIZE events (prints seconds, events/s and Spark/DuckDB ratios)
	@$(PY) -m bench --size $(SIZE)

clean: ## Remove the local lake, reports and dbt output (keeps environments and jars)
	@$(QUICEXP) catalog stop >/dev/null 2>&1 || true
	rm -rf var

-include mk/*.mk
