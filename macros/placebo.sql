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
