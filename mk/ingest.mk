EVENTS ?= 10000000

.PHONY: bench-ingest test-ingest

bench-ingest: setup ## Ingest rows/s for an EVENTS-event upload day, side by side with DuckDB on the same files
	@$(PY) bench/bench_ingest.py --events $(EVENTS)

test-ingest: setup ## Run the ingestion and qlog tests (tests/jobs)
	@$(PY) -m pytest tests/jobs -x -q $(PYTEST_ARGS)
