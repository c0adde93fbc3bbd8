# Deployment: docker compose, cluster mode, PostgreSQL metastore, sizing (docs/deploy.md).
SCALE_EVENTS ?= 1000000 10000000 50000000

.PHONY: deploy-env test-deploy compose-check bench-scale

deploy-env: ## Generate docker compose's secrets into ~/.config/quicexp/compose.env (0600)
	@deploy/make-env.sh

compose-check: setup ## Validate docker-compose.yml (Compose Specification schema, repo references)
	@$(PY) -m pytest -q tests/deploy/test_deploy_compose.py $(PYTEST_ARGS)

test-deploy: setup ## Cluster-mode, PostgreSQL-metastore and compose tests (starts Spark standalone + PostgreSQL)
	@bash scripts/test-deps.d/postgresql.sh
	@$(PY) -m pytest -q tests/deploy $(PYTEST_ARGS)

bench-scale: setup ## Daily pipeline cost at SCALE_EVENTS events/day (µs/event per stage, shuffle, files)
	@$(PY) bench/bench_scale.py --events $(SCALE_EVENTS)
