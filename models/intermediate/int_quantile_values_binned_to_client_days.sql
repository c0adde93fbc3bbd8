{#- Per client per day per quantile metric: how many of the client's events fall in each
    value bin (macros/quantile_bins.sql). Quantile metrics that reuse another one's values
    (histogram_of) are not repeated here. -#}
{{ config(
    partition_by=['event_date'],
    replace_where=open_days_predicate('event_date'),
) }}

{%- set kinds = ['quantile'] %}

with
{% for source in metric_sources(kinds) %}
{{ source }} as (
    select * from {{ ref('stg_telemetry__' ~ source) }}
    where {{ in_run_window('event_date') }}
),

{{ source }}_binned as (
    {%- for m in metrics_where(kinds, source) if not m.histogram_of %}
    select
        client_id,
        event_date,
        array_sort(map_entries(experiments)) as assignments,
        '{{ m.name }}' as metric,
        {{ value_bin(m.value) }} as value_bin
    from {{ source }}
    where ({{ m.filter }}) and ({{ m.value }}) is not null
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
),

{% endfor %}
unioned as (
    {%- for source in metric_sources(kinds) %}
    select * from {{ source }}_binned
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
),

final as (
    select
        client_id,
        event_date,
        assignments,
        metric,
        value_bin,
        count(*) as n_events
    from unioned
    group by client_id, event_date, assignments, metric, value_bin
)

select * from final
