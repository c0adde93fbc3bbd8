{#- The logical day being processed, and the first event date a run may still change:
    ingestion lands late events up to `lookback_days` before their upload day. -#}
{% macro run_day() -%}
    date'{{ var("day") }}'
{%- endmacro %}

{% macro first_open_day() -%}
    date_sub(date'{{ var("day") }}', {{ var("lookback_days", 3) }})
{%- endmacro %}

{#- The slice an incremental model replaces: the open days of `column`. -#}
{% macro open_days_predicate(column) -%}
    {{ column }} between {{ first_open_day() }} and {{ run_day() }}
{%- endmacro %}

{#- Rows of `column` a run reads: up to the run day, and only the open days when incremental. -#}
{% macro in_run_window(column) -%}
    {{ column }} <= {{ run_day() }}
    {%- if is_incremental() %} and {{ column }} >= {{ first_open_day() }}{% endif %}
{%- endmacro %}
