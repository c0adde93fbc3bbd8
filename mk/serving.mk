# Analysts on the lake: Spark Thrift Server, Superset, notebooks (docs/serving.md).
.PHONY: serve serve-stop serve-status superset superset-stop superset-status superset-import superset-export notebook-kernel notebook test-serving

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

# The executed copy goes under the lake's home (QUICEXP_HOME, default var/), not into notebooks/:
# the committed notebook stays without outputs. jupyter-execute is nbclient's command line (no
# Jupyter front end is installed: open the copy in any notebook viewer, or the PNGs beside it).
# The kernel runs in notebooks/ (the notebook's folder), so the home and a QUICEXP_CONFIG file
# are passed to it as absolute paths.
JUPYTER_EXECUTE ?= .venvs/pipeline/bin/jupyter-execute
notebook: notebook-kernel ## Run notebooks/explore_experiment.ipynb headless on the lake: <home>/notebooks/ (executed copy + figures as PNG)
	@settings="$$($(QUICEXP) settings --shell)" || exit $$?; \
	  eval "$$(sed -n 's/^HOME=/home=/p' <<<"$$settings")"; out="$$home/notebooks"; \
	  figures="$${QUICEXP_NOTEBOOK_FIGURES:-$$out/figures}"; \
	  mkdir -p "$$out" "$$figures" || exit $$?; \
	  export QUICEXP_HOME="$$home" QUICEXP_NOTEBOOK_FIGURES="$$(realpath "$$figures")"; \
	  if [ -n "$$QUICEXP_CONFIG" ]; then export QUICEXP_CONFIG="$$(realpath "$$QUICEXP_CONFIG")"; fi; \
	  $(JUPYTER_EXECUTE) --timeout=1800 --output="$$out/explore_experiment" notebooks/explore_experiment.ipynb && \
	  echo "executed notebook: $$out/explore_experiment.ipynb" && \
	  echo "figures (PNG): $$QUICEXP_NOTEBOOK_FIGURES/"

test-serving: setup ## Thrift, Superset (API + headless Chromium), notebook tests
	@scripts/test.sh tests/serving $(PYTEST_ARGS)
