{#- The sufficient-statistics marts' shared parts (experiment_sufficient_stats and
    experiment_placebo_sufficient_stats; the columns are stats/schema.py's). -#}

{#- The moment sums of the sufficient-statistics marts (stats/schema.py) over unit rows with
    columns y, x, c, d, n_events and pre_n_events (docs/stats.md, "Input table"). -#}
{% macro moment_sums() -%}
    count(*) as n_units,
    sum(y) as sum_y,
    sum(y * y) as sum_y2,
    sum(x) as sum_x,
    sum(x * x) as sum_x2,
    sum(x * y) as sum_xy,
    sum(pre_n_events) > 0 as has_pre_period,
    sum(c) as sum_c,
    sum(c * c) as sum_c2,
    sum(y * c) as sum_yc,
    sum(d) as sum_d,
    sum(d * d) as sum_d2,
    sum(c * d) as sum_cd,
    sum(y * d) as sum_yd,
    sum(x * c) as sum_xc,
    sum(x * d) as sum_xd,
    cast(sum(n_events) as double) as n_events
{%- endmacro %}


{#- The statistic columns of a sufficient-statistics row, from relation `rel`, in the marts'
    order (after the keys). -#}
{% macro sufficient_stat_columns(rel) -%}
    {%- for column in ['n_units', 'sum_y', 'sum_y2', 'sum_x', 'sum_x2', 'sum_xy', 'sum_c', 'sum_c2', 'sum_yc', 'sum_d', 'sum_d2', 'sum_cd', 'sum_yd', 'sum_xc', 'sum_xd', 'quantile_p', 'quantile_value', 'n_events', 'sum_s', 'sum_s2', 'sum_n', 'sum_n2', 'sum_sn', 'grid_p', 'grid_value'] %}
        {{ rel }}.{{ column }}{{ ',' if not loop.last }}
    {%- endfor %}
{%- endmacro %}
