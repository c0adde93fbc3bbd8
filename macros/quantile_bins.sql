{#- Quantile metrics are computed over binned event values: bin k holds values in
    [(1 + w)^k, (1 + w)^(k + 1)) with w = var quantile_bin_width (relative), and every value
    in a bin is represented by the bin's geometric midpoint (1 + w)^(k + 0.5). A quantile read
    from the bins is therefore within a factor (1 + w)^(1/2) of the exact order statistic
    (docs/metrics.md). Values <= 0 (and null-free zeros) go to a bin of their own, worth 0. -#}

{% macro zero_bin() %}-1000000000{% endmacro %}

{% macro value_bin(expression) -%}
    case
        when {{ expression }} > 0
            then cast(floor(ln({{ expression }}) / ln(1.0 + {{ var('quantile_bin_width') }})) as int)
        else {{ zero_bin() }}
    end
{%- endmacro %}

{% macro bin_value(bin) -%}
    case
        when {{ bin }} = {{ zero_bin() }} then 0.0
        else exp(({{ bin }} + 0.5) * ln(1.0 + {{ var('quantile_bin_width') }}))
    end
{%- endmacro %}


{#- CTEs reading quantiles off a histogram CTE `histogram` (columns: `keys`, metric,
    value_bin, n_events; one row per group and bin, metric being the histogram's metric).
    For every target (macro quantile_target_rows) and grid coefficient c the rank
    r = ceil(N g) of g = p + c sqrt(p (1 - p) / N) is looked up (type-1 empirical quantile:
    the smallest binned value with at least r events at or below it). Produces the CTE
    `<histogram>_quantiles`,
    restricted to the targets where `target_filter` holds (columns groups.*, targets.*):: keys, metric (the target's), quantile_p, n_events, quantile_bin,
    quantile_value, grid_p, grid_value. -#}
{% macro quantile_grid_ctes(histogram, keys, coefficients, target_filter='true') %}
{%- set key_list = keys | join(', ') %}
{{ histogram }}_cumulative as (
    select
        {{ key_list }},
        metric,
        value_bin,
        n_events,
        sum(n_events) over (
            partition by {{ key_list }}, metric order by value_bin
            rows between unbounded preceding and current row
        ) as cumulative_events,
        sum(n_events) over (partition by {{ key_list }}, metric) as total_events
    from {{ histogram }}
),

{{ histogram }}_groups as (
    select distinct {{ key_list }}, metric, total_events from {{ histogram }}_cumulative
),

{{ histogram }}_targets as (
    select
        {% for key in keys %}groups.{{ key }}, {% endfor %}
        groups.metric as histogram_metric,
        targets.metric,
        targets.quantile_p,
        groups.total_events,
        grid.coefficient,
        targets.quantile_p + grid.coefficient
            * sqrt(targets.quantile_p * (1 - targets.quantile_p) / groups.total_events) as grid_p
    from {{ histogram }}_groups as groups
    inner join ({{ quantile_target_rows() }}) as targets
        on groups.metric = targets.histogram_metric
        and {{ target_filter }}
    lateral view explode(array({{ coefficients | join(', ') }})) grid as coefficient
),

{{ histogram }}_ranks as (
    select
        *,
        least(greatest(cast(ceil(total_events * grid_p) as bigint), 1), total_events) as event_rank
    from {{ histogram }}_targets
    where grid_p > 0 and grid_p < 1
),

{#- The bin holding each rank, found in one ordered pass instead of a range join: the
    histogram's bins (at position cumulative_events) and the ranks (at position event_rank)
    sorted together by descending position, bins before ranks at equal positions; a rank's
    bin is the last bin seen so far, i.e. the one with the smallest cumulative_events >=
    event_rank (cumulative_events - n_events < event_rank <= cumulative_events). -#}
{{ histogram }}_positions as (
    select
        {{ key_list }},
        metric as histogram_metric,
        cast(null as string) as metric,
        cast(null as double) as quantile_p,
        total_events,
        cast(null as double) as coefficient,
        cast(null as double) as grid_p,
        cumulative_events as position,
        0 as is_rank,
        value_bin
    from {{ histogram }}_cumulative
    union all
    select
        {{ key_list }},
        histogram_metric,
        metric,
        quantile_p,
        total_events,
        coefficient,
        grid_p,
        event_rank as position,
        1 as is_rank,
        cast(null as int) as value_bin
    from {{ histogram }}_ranks
),

{{ histogram }}_grid as (
    select
        {{ key_list }},
        metric,
        quantile_p,
        total_events,
        coefficient,
        grid_p,
        value_bin
    from (
        select
            {{ key_list }},
            metric,
            quantile_p,
            total_events,
            coefficient,
            grid_p,
            is_rank,
            last(value_bin, true) over (
                partition by {{ key_list }}, histogram_metric
                order by position desc, is_rank
                rows between unbounded preceding and current row
            ) as value_bin
        from {{ histogram }}_positions
    )
    where is_rank = 1
),

{{ histogram }}_quantiles as (
    select
        {{ key_list }},
        metric,
        quantile_p,
        max(total_events) as n_events,
        max(case when coefficient = 0 then value_bin end) as quantile_bin,
        {{ bin_value('max(case when coefficient = 0 then value_bin end)') }} as quantile_value,
        array_sort(collect_list(named_struct(
            'grid_p', grid_p, 'grid_value', {{ bin_value('value_bin') }}
        ))) as grid
    from {{ histogram }}_grid
    group by {{ key_list }}, metric, quantile_p
)
{% endmacro %}
