# Analysts on the lake: Spark Thrift Server, Superset, notebooks (docs/serving.md).
.PHONY: serve serve-stop serve-status superset superset-stop superset-status superset-import superset-export notebook-kernel test-serving

serve: setup ## Start the Spark Thrift Server on 127.0.0.1 (the lake's SQL endpoint)
	@$(QUICEXP) serve start

serve-stop: ## Stop the Spark Thrift Server
	@$(QUICEXP) serve stop

serve-status: ## Is the Thrift server running?
	@$(QUICEXP) serve status

superset: serve ## Set up Superset once (secrets, admin, dashboards) and start it on 127.0.0.1
	@$(QUICEXP) superset setup
	@$(QUICEXP) superset start

superset-stop: ## Stop Superset
	@$(QUICEXP) superset stop

superset-status: ## Is Superset running and set up?
	@$(QUICEXP) superset status

superset-import: ## Import dashboards/ into Superset (overwrites by UUID)
	@$(QUICEXP) superset import

superset-export: ## Export Superset's dashboards, normalised, into dashboards/
	@$(QUICEXP) superset export

notebook-kernel: setup ## Register the pipeline env as Jupyter kernel "quicexp-pipeline" (for notebooks/)
	@$(PY) -m ipykernel install --user --name quicexp-pipeline --display-name "quicexp (pipeline env)"

test-serving: setup ## Thrift, Superset (API + headless Chromium), notebook tests
	@scripts/test.sh tests/serving $(PYTEST_ARGS)
