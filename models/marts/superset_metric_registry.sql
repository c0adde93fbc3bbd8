{#- The metric registry as a relation, for Superset's datasets (dashboards/): how each metric is
    shown (label, displayed unit, scale), which way is better (direction) and where it sits in
    the reading order (section of quicexp.metrics.GROUPS, then registry order), as
    reports/metrics.py shows them. A view over the registry var only (no table is read), so it
    builds on any lake and follows registry/metrics.yml at every dbt run. -#}
{{ config(materialized='view') }}

{%- set groups = ['latency', 'video', 'transport', 'qlog', 'other'] %}

select * from values
{%- for m in metric_registry() %}
    {%- set scale = m.get('scale', 1.0) %}
    {%- set unit = '%' if (m.unit == 'fraction' and scale == 100) else ('kbps' if m.unit == 'kbit/s' else m.unit) %}
    {%- set group = m.get('group', 'other') %}
    ('{{ m.name }}', '{{ m.label | replace("\\", "\\\\") | replace("'", "\\'") }}',
     '{{ unit | replace("\\", "\\\\") | replace("'", "\\'") }}', cast({{ scale }} as double),
     '{{ m.direction }}', {{ 'true' if m.guardrail else 'false' }}, '{{ group }}',
     {{ groups.index(group) if group in groups else groups | length }}, {{ loop.index }}){{ ',' if not loop.last }}
{%- endfor %}
as registry (metric, label, unit, scale, direction, is_guardrail, metric_group, group_rank, registry_rank)
