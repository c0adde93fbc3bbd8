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


{#- The coarse bin of a value bin: K = var quantile_coarse_factor consecutive value bins. -#}
{% macro coarse_bin(bin) -%}
    cast(floor({{ bin }} / {{ var('quantile_coarse_factor') }}) as bigint)
{%- endmacro %}


{#- The target columns of a histogram bin's row in an ordered rank lookup, which has no target
    (the rank rows of the same `union all` carry them, in this order). -#}
{% macro no_target_columns(total_events) -%}
    cast(null as string) as metric,
    cast(null as double) as quantile_p,
    {{ total_events }} as total_events,
    cast(null as double) as coefficient,
    cast(null as double) as grid_p
{%- endmacro %}


{#- CTEs reading quantiles per segment off unit-level bins. `cells` is a CTE with the columns
    `keys`, the segment columns (macro segment_columns), metric (the histogram's), value_bin
    and n_events, any number of rows per bin (one per unit and bin, say). For every segment
    (macro explode_segments) of every group of `keys`, every target (macro
    quantile_target_rows) where `target_filter` holds (columns groups.*, targets.*) and every
    grid coefficient c, the rank r = ceil(N g) of g = p + c sqrt(p (1 - p) / N) is looked up:
    the type-1 empirical quantile, the smallest binned value with at least r events at or below
    it.

    Exact, in two passes, so that no segment's whole histogram is built: with w = 0.001 a
    segment's histogram has about as many rows as it has events, and every unit is in eight
    segments. (1) Histograms of coarse bins (macro coarse_bin), summed over the cells before
    they are spread over segments, give each rank its coarse bin b and the events below b;
    (2) only the cells in a chosen coarse bin are joined to the segments that chose it, and the
    rank minus the events below b is looked up in b's value bins. Coarse bins are runs of consecutive value
    bins, so (2) finds the same bin as one pass over the whole histogram would.

    A rank's bin is found in one ordered pass instead of a range join: the histogram's bins
    (at position cumulative_events) and the ranks (at position event_rank) sorted together by
    descending position, bins before ranks at equal positions; a rank's bin is the last bin
    seen so far, i.e. the one with the smallest cumulative_events >= event_rank.

    `sums`: more columns of `cells` (integers) summed like n_events. For each column x the
    CTE `<name>_quantiles` has x_at_quantile, the sum of x over the bins at or below the
    quantile's bin (coefficient 0), and x_total, the sum over the whole segment's histogram;
    both come out of the same two passes (the coarse pass gives the sum below the coarse bin,
    the fine pass the running sum within it).

    Produces the CTE `<name>_quantiles`: keys, segment_type, segment_value, metric (the
    target's), quantile_p, n_events, quantile_bin, quantile_value, grid (array of
    (grid_p, grid_value), sorted), and x_at_quantile and x_total for each x in `sums`. -#}
{% macro segmented_quantile_ctes(name, cells, keys, coefficients, target_filter='true', sums=[]) %}
{%- set group_keys = keys + ['segment_type', 'segment_value'] %}
{%- set key_list = keys | join(', ') %}
{%- set group_list = group_keys | join(', ') %}
{{ name }}_coarse_cells as (
    select
        {{ key_list }},
        {{ segment_columns() | join(', ') }},
        metric,
        {{ coarse_bin('value_bin') }} as coarse_bin,
        {% for x in sums %}sum({{ x }}) as {{ x }},
        {% endfor -%}
        sum(n_events) as n_events
    from {{ cells }}
    group by all
),

{{ name }}_coarse as (
    select
        {% for key in keys %}{{ name }}_coarse_cells.{{ key }}, {% endfor %}
        segment.segment_type,
        segment.segment_value,
        {{ name }}_coarse_cells.metric,
        {{ name }}_coarse_cells.coarse_bin,
        {% for x in sums %}sum({{ name }}_coarse_cells.{{ x }}) as {{ x }},
        {% endfor -%}
        sum({{ name }}_coarse_cells.n_events) as n_events
    from {{ name }}_coarse_cells
    {{ explode_segments(name ~ '_coarse_cells') }}
    group by all
),

{{ name }}_coarse_cumulative as (
    select
        *,
        sum(n_events) over (
            partition by {{ group_list }}, metric order by coarse_bin
            rows between unbounded preceding and current row
        ) as cumulative_events,
        {% for x in sums -%}
        sum({{ x }}) over (
            partition by {{ group_list }}, metric order by coarse_bin
            rows between unbounded preceding and current row
        ) - {{ x }} as {{ x }}_below,
        sum({{ x }}) over (partition by {{ group_list }}, metric) as {{ x }}_total,
        {% endfor -%}
        sum(n_events) over (partition by {{ group_list }}, metric) as total_events
    from {{ name }}_coarse
),

{{ quantile_rank_ctes(name, name ~ '_coarse_cumulative', group_keys, coefficients, target_filter, sums) }},

{{ name }}_coarse_found as (
    select * from (
        select
            {{ group_list }}, histogram_metric, metric, quantile_p, total_events, coefficient,
            grid_p, event_rank, is_rank,
            {% for x in sums %}{{ x }}_total, last({{ x }}_below, true) over ordered as {{ x }}_below,
            {% endfor -%}
            last(coarse_bin, true) over ordered as coarse_bin,
            last(events_below, true) over ordered as events_below
        from (
            select
                {{ group_list }},
                metric as histogram_metric,
                {{ no_target_columns('total_events') }},
                cast(null as bigint) as event_rank,
                cumulative_events as position,
                0 as is_rank,
                coarse_bin,
                cumulative_events - n_events as events_below
                {%- for x in sums %},
                cast(null as bigint) as {{ x }}_total,
                {{ x }}_below
                {%- endfor %}
            from {{ name }}_coarse_cumulative
            union all
            select
                {{ group_list }}, histogram_metric, metric, quantile_p, total_events, coefficient,
                grid_p, event_rank,
                event_rank as position,
                1 as is_rank,
                cast(null as bigint) as coarse_bin,
                cast(null as bigint) as events_below
                {%- for x in sums %},
                {{ x }}_total,
                cast(null as bigint) as {{ x }}_below
                {%- endfor %}
            from {{ name }}_ranks
        )
        window ordered as (
            partition by {{ group_list }}, histogram_metric
            order by position desc, is_rank
            rows between unbounded preceding and current row
        )
    )
    where is_rank = 1
),

{{ name }}_chosen as (
    select distinct {{ group_list }}, histogram_metric as metric, coarse_bin
    from {{ name }}_coarse_found
),

{#- The value bins of the chosen coarse bins, per segment: each cell joins the chosen coarse
    bins of its groups' segments it is in (no spreading of all cells over segments). -#}
{{ name }}_fine as (
    select /*+ BROADCAST(chosen) */
        {% for key in group_keys %}chosen.{{ key }}, {% endfor %}
        chosen.metric,
        chosen.coarse_bin,
        cells.value_bin,
        {% for x in sums %}sum(cells.{{ x }}) as {{ x }},
        {% endfor -%}
        sum(cells.n_events) as n_events
    from {{ cells }} as cells
    inner join {{ name }}_chosen as chosen
        on {% for key in keys %}cells.{{ key }} = chosen.{{ key }}
        and {% endfor %}cells.metric = chosen.metric
        and {{ coarse_bin('cells.value_bin') }} = chosen.coarse_bin
        and {{ segment_value_of('cells', 'chosen.segment_type') }} = chosen.segment_value
    group by all
),

{{ name }}_grid as (
    select * from (
        select
            {{ group_list }}, metric, quantile_p, total_events, coefficient, grid_p, is_rank,
            {% for x in sums %}{{ x }}_total, {{ x }}_below + last({{ x }}_cum, true) over ordered as {{ x }}_at,
            {% endfor -%}
            last(value_bin, true) over ordered as value_bin
        from (
            select
                {{ group_list }},
                metric as histogram_metric,
                {{ no_target_columns('cast(null as bigint)') }},
                coarse_bin,
                sum(n_events) over (
                    partition by {{ group_list }}, metric, coarse_bin order by value_bin
                    rows between unbounded preceding and current row
                ) as position,
                0 as is_rank,
                value_bin
                {%- for x in sums %},
                cast(null as bigint) as {{ x }}_total,
                cast(null as bigint) as {{ x }}_below,
                sum({{ x }}) over (
                    partition by {{ group_list }}, metric, coarse_bin order by value_bin
                    rows between unbounded preceding and current row
                ) as {{ x }}_cum
                {%- endfor %}
            from {{ name }}_fine
            union all
            select
                {{ group_list }}, histogram_metric, metric, quantile_p, total_events, coefficient,
                grid_p, coarse_bin,
                event_rank - events_below as position,
                1 as is_rank,
                cast(null as int) as value_bin
                {%- for x in sums %},
                {{ x }}_total,
                {{ x }}_below,
                cast(null as bigint) as {{ x }}_cum
                {%- endfor %}
            from {{ name }}_coarse_found
        )
        window ordered as (
            partition by {{ group_list }}, histogram_metric, coarse_bin
            order by position desc, is_rank
            rows between unbounded preceding and current row
        )
    )
    where is_rank = 1
),

{{ quantile_result_cte(name, group_keys, sums) }}
{% endmacro %}


{#- CTEs reading quantiles off unit-level bins for groups without segments (the placebo's
    pseudo-arms: the overall segment only). Same inputs and the same CTE `<name>_quantiles` as
    segmented_quantile_ctes (segment_type 'overall', segment_value 'all'), in one pass: each
    group's whole histogram (cells summed per value bin), its running sums, and a rank's bin
    found in the same ordered pass over bins and ranks. Without segments no cell is spread over
    several histograms, so the two passes over coarse and value bins would only add Spark stages
    (a fixed cost per stage that dominates on small looks). -#}
{% macro quantile_ctes(name, cells, keys, coefficients, target_filter='true', sums=[]) %}
{%- set group_keys = keys + ['segment_type', 'segment_value'] %}
{%- set group_list = group_keys | join(', ') %}
{{ name }}_histogram as (
    select
        {{ keys | join(', ') }},
        'overall' as segment_type,
        'all' as segment_value,
        metric,
        value_bin,
        {% for x in sums %}sum({{ x }}) as {{ x }},
        {% endfor -%}
        sum(n_events) as n_events
    from {{ cells }}
    group by all
),

{{ name }}_cumulative as (
    select
        *,
        sum(n_events) over ascending as cumulative_events,
        {% for x in sums -%}
        sum({{ x }}) over ascending as {{ x }}_cum,
        sum({{ x }}) over whole as {{ x }}_total,
        {% endfor -%}
        sum(n_events) over whole as total_events
    from {{ name }}_histogram
    window
        ascending as (partition by {{ group_list }}, metric order by value_bin
                      rows between unbounded preceding and current row),
        whole as (partition by {{ group_list }}, metric)
),

{{ quantile_rank_ctes(name, name ~ '_cumulative', group_keys, coefficients, target_filter, sums) }},

{{ name }}_grid as (
    select * from (
        select
            {{ group_list }}, metric, quantile_p, total_events, coefficient, grid_p, is_rank,
            {% for x in sums %}{{ x }}_total, last({{ x }}_cum, true) over ordered as {{ x }}_at,
            {% endfor -%}
            last(value_bin, true) over ordered as value_bin
        from (
            select
                {{ group_list }},
                metric as histogram_metric,
                {{ no_target_columns('cast(null as bigint)') }},
                cumulative_events as position,
                0 as is_rank,
                value_bin
                {%- for x in sums %},
                cast(null as bigint) as {{ x }}_total,
                {{ x }}_cum
                {%- endfor %}
            from {{ name }}_cumulative
            union all
            select
                {{ group_list }}, histogram_metric, metric, quantile_p, total_events, coefficient,
                grid_p,
                event_rank as position,
                1 as is_rank,
                cast(null as int) as value_bin
                {%- for x in sums %},
                {{ x }}_total,
                cast(null as bigint) as {{ x }}_cum
                {%- endfor %}
            from {{ name }}_ranks
        )
        window ordered as (
            partition by {{ group_list }}, histogram_metric
            order by position desc, is_rank
            rows between unbounded preceding and current row
        )
    )
    where is_rank = 1
),

{{ quantile_result_cte(name, group_keys, sums) }}
{% endmacro %}


{#- The rank lookups of quantile_ctes and segmented_quantile_ctes: CTEs `<name>_targets` (every
    group of `source` (columns group_keys, metric, x_total for x in sums, total_events) with every
    target of its histogram where `target_filter` holds and every grid coefficient) and
    `<name>_ranks` (the grid points inside (0, 1), with the rank of each). -#}
{% macro quantile_rank_ctes(name, source, group_keys, coefficients, target_filter, sums) %}
{%- set group_list = group_keys | join(', ') %}
{{ name }}_targets as (
    select
        {% for key in group_keys %}groups.{{ key }}, {% endfor %}
        groups.metric as histogram_metric,
        targets.metric,
        targets.quantile_p,
        groups.total_events,
        {% for x in sums %}groups.{{ x }}_total,
        {% endfor -%}
        grid.coefficient,
        targets.quantile_p + grid.coefficient
            * sqrt(targets.quantile_p * (1 - targets.quantile_p) / groups.total_events) as grid_p
    from (
        select distinct
            {{ group_list }}, metric, {% for x in sums %}{{ x }}_total, {% endfor %}total_events
        from {{ source }}
    ) as groups
    inner join ({{ quantile_target_rows() }}) as targets
        on groups.metric = targets.histogram_metric
        and {{ target_filter }}
    lateral view explode(array({{ coefficients | join(', ') }})) grid as coefficient
),

{{ name }}_ranks as (
    select
        *,
        least(greatest(cast(ceil(total_events * grid_p) as bigint), 1), total_events) as event_rank
    from {{ name }}_targets
    where grid_p > 0 and grid_p < 1
)
{% endmacro %}


{#- `<name>_quantiles` from `<name>_grid` (one row per group, target and grid point, with its
    value bin and the sums at it): the estimate, the grid and the sums at the estimate. -#}
{% macro quantile_result_cte(name, group_keys, sums) %}
{%- set group_list = group_keys | join(', ') %}
{{ name }}_quantiles as (
    select
        {{ group_list }},
        metric,
        quantile_p,
        max(total_events) as n_events,
        max(case when coefficient = 0 then value_bin end) as quantile_bin,
        {{ bin_value('max(case when coefficient = 0 then value_bin end)') }} as quantile_value,
        array_sort(collect_list(named_struct(
            'grid_p', grid_p, 'grid_value', {{ bin_value('value_bin') }}
        ))) as grid
        {%- for x in sums %},
        max(case when coefficient = 0 then {{ x }}_at end) as {{ x }}_at_quantile,
        max({{ x }}_total) as {{ x }}_total
        {%- endfor %}
    from {{ name }}_grid
    group by {{ group_list }}, metric, quantile_p
)
{% endmacro %}
