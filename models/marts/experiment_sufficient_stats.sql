{#- The stats engine's input (stats/schema.py, docs/metrics.md): per experiment x metric x
    segment x arm x as_of_date (x quantile_p for quantile metrics), experiment-to-date
    sufficient statistics. Per unit: y, x = the unit's to-date numerator / denominator
    (ratio), y = its per-unit value (mean, proportion); c, d = the same over the CUPED
    pre-period (0 for units without pre-period events; the CUPED sums are null when no unit
    of the arm and segment had any). -#}
{{ config(
    partition_by=['as_of_date'],
    replace_where=open_days_predicate('as_of_date'),
) }}

with arms as (
    select * from {{ ref('stg_registry__experiment_arms') }}
),

registry as (
    {{ metric_registry_rows() }}
),

unit_metrics as (
    select * from {{ ref('int_experiment_unit_metrics_aggregated_to_dates') }}
    where {{ in_run_window('as_of_date') }}
),

units as (
    select * from {{ ref('int_experiment_units_segmented_to_dates') }}
    where {{ in_run_window('as_of_date') }}
),

quantile_statistics as (
    select * from {{ ref('int_quantile_statistics_aggregated_to_arms') }}
    where {{ in_run_window('as_of_date') }}
),

unit_values as (
    select
        units.*,
        unit_metrics.metric,
        registry.metric_kind,
        unit_metrics.n_events,
        unit_metrics.pre_n_events,
        {{ unit_value('registry.metric_kind', 'unit_metrics.numerator', 'unit_metrics.denominator', 'unit_metrics.n_events') }} as y,
        case when registry.metric_kind = 'ratio' then unit_metrics.denominator end as x,
        {{ unit_value('registry.metric_kind', 'unit_metrics.pre_numerator', 'unit_metrics.pre_denominator', 'unit_metrics.pre_n_events') }} as c,
        case when registry.metric_kind = 'ratio' then unit_metrics.pre_denominator end as d
    from unit_metrics
    inner join units
        on unit_metrics.experiment_id = units.experiment_id
        and unit_metrics.arm = units.arm
        and unit_metrics.client_id = units.client_id
        and unit_metrics.as_of_date = units.as_of_date
    inner join registry
        on unit_metrics.metric = registry.metric
),

segmented as (
    select
        unit_values.*,
        segment.segment_type,
        segment.segment_value
    from unit_values
    {{ explode_segments('unit_values') }}
),

moments as (
    select
        experiment_id,
        metric,
        segment_type,
        segment_value,
        arm,
        as_of_date,
        {{ moment_sums() }}
    from segmented
    where {{ metric_segment_filter('metric', 'segment_type') }}
    group by 1, 2, 3, 4, 5, 6
),

statistics as (
    select
        experiment_id, metric, segment_type, segment_value, arm, as_of_date, n_units,
        sum_y, sum_y2, sum_x, sum_x2, sum_xy,
        {%- for column in ['sum_c', 'sum_c2', 'sum_yc', 'sum_d', 'sum_d2', 'sum_cd', 'sum_yd', 'sum_xc', 'sum_xd'] %}
        case when has_pre_period then {{ column }} end as {{ column }},
        {%- endfor %}
        cast(null as double) as quantile_p,
        cast(null as double) as quantile_value,
        n_events,
        cast(null as double) as sum_s,
        cast(null as double) as sum_s2,
        cast(null as double) as sum_n,
        cast(null as double) as sum_n2,
        cast(null as double) as sum_sn,
        cast(null as array<double>) as grid_p,
        cast(null as array<double>) as grid_value
    from moments
    union all
    select
        experiment_id, metric, segment_type, segment_value, arm, as_of_date, n_units,
        {%- for column in ['sum_y', 'sum_y2', 'sum_x', 'sum_x2', 'sum_xy', 'sum_c', 'sum_c2', 'sum_yc', 'sum_d', 'sum_d2', 'sum_cd', 'sum_yd', 'sum_xc', 'sum_xd'] %}
        cast(null as double) as {{ column }},
        {%- endfor %}
        quantile_p, quantile_value, n_events, sum_s, sum_s2, sum_n, sum_n2, sum_sn,
        grid_p, grid_value
    from quantile_statistics
),

final as (
    select
        statistics.experiment_id,
        statistics.metric,
        registry.metric_kind,
        registry.is_guardrail,
        statistics.segment_type,
        statistics.segment_value,
        statistics.arm,
        arms.is_control,
        statistics.as_of_date,
        {{ sufficient_stat_columns('statistics') }}
    from statistics
    inner join arms
        on statistics.experiment_id = arms.experiment_id and statistics.arm = arms.arm
    inner join registry
        on statistics.metric = registry.metric
)

select * from final
