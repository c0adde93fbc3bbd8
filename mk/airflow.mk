# Airflow (issue 7): the daily DAG on a local Airflow. scripts/airflow.sh does the work.
DAY ?=

.PHONY: airflow airflow-stop airflow-status airflow-day

airflow: setup ## Start Airflow (api-server, scheduler, dag-processor) on 127.0.0.1; admin password generated once into a 0600 file under the state dir
	@scripts/airflow.sh start

airflow-stop: ## Stop the Airflow processes started by `make airflow`
	@scripts/airflow.sh stop

airflow-status: ## Say which Airflow processes of `make airflow` run
	@scripts/airflow.sh status

airflow-day: setup ## Run quicexp_daily for one logical day now (DAY=YYYY-MM-DD): run named after DAY, task logs here and in the UI
	@test -n "$(DAY)" || { echo "usage: make airflow-day DAY=YYYY-MM-DD" >&2; exit 2; }
	@scripts/airflow.sh day "$(DAY)"
