# dbt models (issue 5): QoE metrics from bronze to the sufficient-statistics mart (docs/metrics.md).
BENCH_DBT_CLIENTS ?= 425000

.PHONY: test-models bench-dbt

test-models: setup ## dbt model tests: sufficient stats vs PySpark, quantile tolerance, incremental = full refresh
	$(PY) -m pytest tests/models -x -q $(PYTEST_ARGS)

bench-dbt: setup ## dbt run time for one simulated day of ~10M events (BENCH_DBT_CLIENTS=425000)
	$(PY) bench/bench_dbt.py --clients $(BENCH_DBT_CLIENTS)
