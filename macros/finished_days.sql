{#- Readers trust finished upload days only (docs/ingestion.md, "A day is atomic"): a bronze
    row whose upload day's latest ingest run of `job` is not finished (killed or failed, still
    running) is skipped, through the run table bronze.ingest_runs (jobs/day_runs.py). Days without
    a run row (never ingested by the job, or bronze written by other means) are not skipped; nor is
    anything when the run table does not exist. -#}
{% macro where_finished_upload_day(job='events') -%}
    {%- set runs = adapter.get_relation(database=none, schema=var('bronze_schema', 'bronze'),
                                        identifier='ingest_runs') if execute else none -%}
    {%- if runs is not none %}
    where upload_date not in (select upload_date from {{ runs }} where job = '{{ job }}' and state <> 'finished')
    {%- endif -%}
{%- endmacro %}
