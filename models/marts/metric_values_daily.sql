{#- Trend charts: each metric per experiment x arm x segment x event_date (that day's
    events only, not cumulative). A unit's segment is the one it has as of that day. -#}
{{ config(
    partition_by=['event_date'],
    replace_where=open_days_predicate('event_date'),
) }}

with registry as (
    {{ metric_registry_rows() }}
),

units as (
    select * from {{ ref('int_experiment_units_segmented_to_dates') }}
    where {{ in_run_window('as_of_date') }}
),

metric_sums as (
    select * from {{ ref('int_metric_sums_aggregated_to_client_days') }}
    where {{ in_run_window('event_date') }}
),

binned as (
    select * from {{ ref('int_quantile_values_binned_to_client_days') }}
    where {{ in_run_window('event_date') }}
),

enrolled_sums as (
    select
        assignment.key as experiment_id,
        assignment.value as arm,
        metric_sums.client_id,
        metric_sums.event_date,
        metric_sums.metric,
        metric_sums.numerator,
        metric_sums.denominator,
        metric_sums.n_events
    from metric_sums
    lateral view inline(metric_sums.assignments) assignment
),

enrolled_bins as (
    select
        assignment.key as experiment_id,
        assignment.value as arm,
        binned.client_id,
        binned.event_date,
        binned.metric,
        binned.value_bin,
        binned.n_events
    from binned
    lateral view inline(binned.assignments) assignment
),

unit_days as (
    select
        units.*,
        enrolled_sums.metric,
        registry.metric_kind,
        sum(enrolled_sums.numerator) as numerator,
        sum(enrolled_sums.denominator) as denominator,
        sum(enrolled_sums.n_events) as n_events
    from enrolled_sums
    inner join units
        on enrolled_sums.experiment_id = units.experiment_id
        and enrolled_sums.arm = units.arm
        and enrolled_sums.client_id = units.client_id
        and enrolled_sums.event_date = units.as_of_date
    inner join registry
        on enrolled_sums.metric = registry.metric
    group by all
),

unit_values as (
    select
        unit_days.*,
        {{ unit_value('metric_kind', 'numerator', 'denominator', 'n_events') }} as y,
        case when metric_kind = 'ratio' then denominator end as x
    from unit_days
),

segmented_values as (
    select
        unit_values.experiment_id,
        unit_values.arm,
        unit_values.metric,
        unit_values.metric_kind,
        segment.segment_type,
        segment.segment_value,
        unit_values.as_of_date as event_date,
        cast(null as double) as quantile_p,
        case
            when unit_values.metric_kind = 'ratio' then sum(unit_values.y) / nullif(sum(unit_values.x), 0)
            else avg(unit_values.y)
        end as value,
        count(*) as n_units,
        sum(unit_values.n_events) as n_events
    from unit_values
    {{ explode_segments('unit_values') }}
    where {{ metric_segment_filter('unit_values.metric', 'segment.segment_type') }}
    group by 1, 2, 3, 4, 5, 6, 7
),

unit_bins as (
    select
        units.*,
        enrolled_bins.metric,
        enrolled_bins.value_bin,
        enrolled_bins.n_events
    from enrolled_bins
    inner join units
        on enrolled_bins.experiment_id = units.experiment_id
        and enrolled_bins.arm = units.arm
        and enrolled_bins.client_id = units.client_id
        and enrolled_bins.event_date = units.as_of_date
),

{#- The units with events of each quantile metric that day: made distinct before the join to
    the units, one row per client and metric instead of one per value bin. -#}
enrolled_metrics as (
    select distinct experiment_id, arm, client_id, event_date, metric
    from enrolled_bins
),

unit_metrics as (
    select
        units.experiment_id, units.arm, units.client_id, units.as_of_date,
        {% for column in segment_columns() %}units.{{ column }}, {% endfor %}enrolled_metrics.metric
    from enrolled_metrics
    inner join units
        on enrolled_metrics.experiment_id = units.experiment_id
        and enrolled_metrics.arm = units.arm
        and enrolled_metrics.client_id = units.client_id
        and enrolled_metrics.event_date = units.as_of_date
),

segment_units as (
    select
        unit_metrics.experiment_id,
        unit_metrics.arm,
        unit_metrics.as_of_date as event_date,
        segment.segment_type,
        segment.segment_value,
        unit_metrics.metric,
        count(*) as n_units
    from unit_metrics
    {{ explode_segments('unit_metrics') }}
    group by 1, 2, 3, 4, 5, 6
),

bin_cells as (
    select
        experiment_id, arm, as_of_date as event_date, {{ segment_columns() | join(', ') }},
        metric, value_bin, n_events
    from unit_bins
),

{{ segmented_quantile_ctes(
    'segmented_bins',
    'bin_cells',
    ['experiment_id', 'arm', 'event_date'],
    [0.0],
    metric_segment_filter('targets.metric', 'groups.segment_type'),
) }},

quantile_values as (
    select
        segmented_bins_quantiles.experiment_id,
        segmented_bins_quantiles.arm,
        segmented_bins_quantiles.metric,
        'quantile' as metric_kind,
        segmented_bins_quantiles.segment_type,
        segmented_bins_quantiles.segment_value,
        segmented_bins_quantiles.event_date,
        segmented_bins_quantiles.quantile_p,
        segmented_bins_quantiles.quantile_value as value,
        segment_units.n_units,
        segmented_bins_quantiles.n_events
    from segmented_bins_quantiles
    inner join ({{ quantile_target_rows() }}) as targets
        on segmented_bins_quantiles.metric = targets.metric
        and segmented_bins_quantiles.quantile_p = targets.quantile_p
    inner join segment_units
        on segmented_bins_quantiles.experiment_id = segment_units.experiment_id
        and segmented_bins_quantiles.arm = segment_units.arm
        and segmented_bins_quantiles.event_date = segment_units.event_date
        and segmented_bins_quantiles.segment_type = segment_units.segment_type
        and segmented_bins_quantiles.segment_value = segment_units.segment_value
        and targets.histogram_metric = segment_units.metric
),

final as (
    select * from segmented_values
    union all
    select * from quantile_values
)

select * from final
