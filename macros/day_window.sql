{#- The logical day being processed, and the first event date a run may still change:
    ingestion lands late events up to `lookback_days` before their upload day. -#}
{% macro run_day() -%}
    date'{{ var("day") }}'
{%- endmacro %}

{% macro first_open_day() -%}
    date_sub(date'{{ var("day") }}', {{ var("lookback_days", 3) }})
{%- endmacro %}
