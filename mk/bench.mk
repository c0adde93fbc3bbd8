FORMAT ?= parquet

.PHONY: bench-pipeline

bench-pipeline: setup ## Pipeline (ingest, dbt build, results) vs a DuckDB reference on one EVENTS-event day (FORMAT=parquet|jsonl); outputs compared first; a row to bench/results/pipeline.csv, then bench-report
	@$(PY) bench/bench_pipeline.py --events $(EVENTS) --format $(FORMAT)
	@$(PY) -m bench.report

.PHONY: bench-checks
CHECKS_CLIENTS ?= 4000
bench-checks: setup ## What the health checks cost a day: the demo's last day (CHECKS_CLIENTS clients) rerun with and without them, fresh processes, alternating; rows to bench/results/checks.csv
	@$(PY) bench/bench_checks.py --clients $(CHECKS_CLIENTS)
	@$(PY) -m bench.report

.PHONY: bench-report

bench-report: setup ## Render bench/results/*.csv (one row per bench run) to bench/report/ (tables, log-log plot) and docs/deploy.md's table
	@$(PY) -m bench.report
