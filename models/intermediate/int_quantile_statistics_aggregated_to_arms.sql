{#- Quantile sufficient statistics per experiment x arm x segment x metric x quantile_p x
    as_of_date, experiment-to-date, for the outer-CI method with clustered units
    (stats/quantile.py): the binned estimate q, the quantile function on a grid of ranks
    around p, and the per-unit counts n_i (events) and s_i (events <= q) summed as
    sum_s, sum_s2, sum_n, sum_n2, sum_sn. -#}
{{ config(
    partition_by=['as_of_date'],
    replace_where=open_days_predicate('as_of_date'),
) }}

with experiments as (
    select * from {{ ref('int_experiments_scheduled_to_dates') }}
    where {{ in_run_window('as_of_date') }}
),

units as (
    select * from {{ ref('int_experiment_units_segmented_to_dates') }}
    where {{ in_run_window('as_of_date') }}
),

binned as (
    select * from {{ ref('int_quantile_values_binned_to_client_days') }}
    where event_date <= {{ run_day() }}
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

unit_bins as (
    select
        experiments.experiment_id,
        enrolled_bins.arm,
        enrolled_bins.client_id,
        experiments.as_of_date,
        enrolled_bins.metric,
        enrolled_bins.value_bin,
        sum(enrolled_bins.n_events) as n_events
    from enrolled_bins
    inner join experiments
        on enrolled_bins.experiment_id = experiments.experiment_id
        and enrolled_bins.event_date between experiments.start_date and experiments.as_of_date
    group by 1, 2, 3, 4, 5, 6
),

segmented_units as (
    select
        units.experiment_id,
        units.arm,
        units.client_id,
        units.as_of_date,
        segment.segment_type,
        segment.segment_value
    from units
    {{ explode_segments('units') }}
),

bin_cells as (
    select
        unit_bins.experiment_id,
        unit_bins.arm,
        unit_bins.as_of_date,
        {% for column in segment_columns() %}units.{{ column }},
        {% endfor -%}
        unit_bins.metric,
        unit_bins.value_bin,
        unit_bins.n_events
    from unit_bins
    inner join units
        on unit_bins.experiment_id = units.experiment_id
        and unit_bins.arm = units.arm
        and unit_bins.client_id = units.client_id
        and unit_bins.as_of_date = units.as_of_date
),

{{ segmented_quantile_ctes(
    'segmented_bins',
    'bin_cells',
    ['experiment_id', 'arm', 'as_of_date'],
    var('quantile_grid_coefficients'),
    metric_segment_filter('targets.metric', 'groups.segment_type'),
) }},

quantiles as (
    select * from segmented_bins_quantiles
),

unit_histograms as (
    select
        experiment_id,
        arm,
        client_id,
        as_of_date,
        metric,
        sum(n_events) as n_events,
        collect_list(named_struct('value_bin', value_bin, 'n_events', n_events)) as bins
    from unit_bins
    group by 1, 2, 3, 4, 5
),

unit_counts as (
    select
        quantiles.experiment_id,
        quantiles.arm,
        quantiles.as_of_date,
        quantiles.segment_type,
        quantiles.segment_value,
        quantiles.metric,
        quantiles.quantile_p,
        quantiles.quantile_value,
        quantiles.n_events,
        quantiles.grid,
        cast(unit_histograms.n_events as double) as n_i,
        cast(aggregate(
            unit_histograms.bins, 0L,
            (acc, b) -> acc + if(b.value_bin <= quantiles.quantile_bin, b.n_events, 0L)
        ) as double) as s_i
    from quantiles
    inner join ({{ quantile_target_rows() }}) as targets
        on quantiles.metric = targets.metric and quantiles.quantile_p = targets.quantile_p
    inner join segmented_units
        on quantiles.experiment_id = segmented_units.experiment_id
        and quantiles.arm = segmented_units.arm
        and quantiles.as_of_date = segmented_units.as_of_date
        and quantiles.segment_type = segmented_units.segment_type
        and quantiles.segment_value = segmented_units.segment_value
    inner join unit_histograms
        on segmented_units.experiment_id = unit_histograms.experiment_id
        and segmented_units.arm = unit_histograms.arm
        and segmented_units.client_id = unit_histograms.client_id
        and segmented_units.as_of_date = unit_histograms.as_of_date
        and targets.histogram_metric = unit_histograms.metric
),

{#- One row per quantile target with its units' sums; the target's quantile and grid (the same on
    every row of the group) ride along, so that the quantiles are not computed twice. -#}
final as (
    select
        experiment_id,
        metric,
        segment_type,
        segment_value,
        arm,
        as_of_date,
        count(*) as n_units,
        quantile_p,
        any_value(quantile_value) as quantile_value,
        cast(any_value(n_events) as double) as n_events,
        sum(s_i) as sum_s,
        sum(s_i * s_i) as sum_s2,
        sum(n_i) as sum_n,
        sum(n_i * n_i) as sum_n2,
        sum(s_i * n_i) as sum_sn,
        transform(any_value(grid), g -> g.grid_p) as grid_p,
        transform(any_value(grid), g -> g.grid_value) as grid_value
    from unit_counts
    group by experiment_id, metric, segment_type, segment_value, arm, as_of_date, quantile_p
)

select * from final
