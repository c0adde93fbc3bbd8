{#- The daily A/A placebo and the known-effect canary (models/marts/
    experiment_placebo_sufficient_stats.sql; docs/stats.md, "Health checks"). -#}

{#- The canary's known factor: a whole number (var placebo_canary_bins) of quantile value bins,
    (1 + w)^bins, so that a binned value moves by exactly that many bins and a binned quantile by
    exactly the factor (macros/quantile_bins.sql). -#}
{% macro canary_factor() -%}
    pow(1.0 + {{ var('quantile_bin_width') }}, {{ var('placebo_canary_bins') }})
{%- endmacro %}


{#- The pseudo-arm ('a' or 'b') of a unit in placebo split `split` of the look `as_of_date`: a
    hash of the experiment, the unit, the look and the split, independent of the experiment's own
    assignment. The look is in the salt, so every day's splits are fresh re-splits: the days'
    placebo comparisons are independent trials of each estimator, not one split followed. -#}
{% macro placebo_arm(experiment_id, client_id, as_of_date, split) -%}
    case when pmod(xxhash64('quicexp-placebo', {{ experiment_id }}, {{ client_id }},
                            cast({{ as_of_date }} as string), {{ split }}), 2) = 0
        then 'a' else 'b' end
{%- endmacro %}


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


{#- The looks the placebo mart forms: the run day's only when incremental (a placebo checks the
    day's estimators on the day's data; a later day's run does not redo it for late uploads, which
    would cost the whole window again), every look on a full refresh. -#}
{% macro placebo_looks(column) -%}
    {%- if is_incremental() -%}
        {{ column }} = {{ run_day() }}
    {%- else -%}
        {{ column }} <= {{ run_day() }}
    {%- endif -%}
{%- endmacro %}
