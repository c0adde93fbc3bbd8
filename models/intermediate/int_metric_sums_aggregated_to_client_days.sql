{#- Per client per day per (non-quantile) metric: the sums of the registry's numerator and
    denominator and the count of the metric's events. One scan per event kind computes every
    metric of that kind. Clients outside any experiment are kept (assignments = []): they
    feed the CUPED pre-period. -#}
{{ config(
    partition_by=['event_date'],
    replace_where=open_days_predicate('event_date'),
) }}

{%- set kinds = ['mean', 'proportion', 'ratio'] %}

with
{% for source in metric_sources(kinds) %}
{%- set metrics = metrics_where(kinds, source) %}
{{ source }} as (
    select * from {{ ref('stg_telemetry__' ~ source) }}
    where {{ in_run_window('event_date') }}
),

{#- Summed first with the client's platform and network as keys, so that the large aggregate
    is a hash aggregate (min() of a string needs a sort aggregate, a sort of every event); the
    second aggregate takes their min over the few rows per client-day. -#}
{{ source }}_summed_by_segment as (
    select
        client_id,
        event_date,
        array_sort(map_entries(experiments)) as assignments,
        platform,
        network_type
        {%- for m in metrics %},
        sum(case when {{ m.filter }} then cast({{ m.numerator }} as double) end)
            as {{ m.name }}__numerator,
        sum(case when {{ m.filter }} then cast({{ m.denominator or 'null' }} as double) end)
            as {{ m.name }}__denominator,
        count_if({{ m.filter }}) as {{ m.name }}__events
        {%- endfor %}
    from {{ source }}
    group by client_id, event_date, array_sort(map_entries(experiments)), platform, network_type
),

{{ source }}_summed as (
    select
        client_id,
        event_date,
        assignments,
        min(platform) as platform,
        min(network_type) as network_type
        {%- for m in metrics %},
        sum({{ m.name }}__numerator) as {{ m.name }}__numerator,
        sum({{ m.name }}__denominator) as {{ m.name }}__denominator,
        sum({{ m.name }}__events) as {{ m.name }}__events
        {%- endfor %}
    from {{ source }}_summed_by_segment
    group by client_id, event_date, assignments
),

{{ source }}_metrics as (
    select
        client_id,
        event_date,
        assignments,
        platform,
        network_type,
        stack(
            {{ metrics | length }}
            {%- for m in metrics %},
            '{{ m.name }}', {{ m.name }}__numerator, {{ m.name }}__denominator, {{ m.name }}__events
            {%- endfor %}
        ) as (metric, numerator, denominator, n_events)
    from {{ source }}_summed
),

{% endfor %}
unioned as (
    {%- for source in metric_sources(kinds) %}
    select * from {{ source }}_metrics
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
        platform,
        network_type,
        metric,
        coalesce(numerator, 0.0) as numerator,
        denominator,
        n_events
    from unioned
    where n_events > 0
)

select * from final
