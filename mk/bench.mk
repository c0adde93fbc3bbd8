FORMAT ?= parquet

.PHONY: bench-pipeline

bench-pipeline: setup ## Pipeline (ingest, dbt build, results) vs a DuckDB reference on one EVENTS-event day (FORMAT=parquet|jsonl); outputs compared first
	@$(PY) bench/bench_pipeline.py --events $(EVENTS) --format $(FORMAT)
