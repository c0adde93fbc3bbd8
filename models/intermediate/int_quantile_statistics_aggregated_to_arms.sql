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

{#- Per unit i and value bin b (ascending): its events n_ib, the unit's running count S_ib and
    its total n_i. The unit sums of the outer-CI method are then sums, over the bins at or below
    the quantile's bin q, of columns of these rows, with no join of units to quantiles:
    s_i = sum_{b<=q} n_ib, s_i n_i = sum_{b<=q} n_ib n_i and, telescoping,
    s_i^2 = sum_{b<=q} (S_ib^2 - S_i(b-1)^2) = sum_{b<=q} n_ib (2 S_ib - n_ib); n_i^2 and the
    unit itself ride on the unit's first bin. Integer sums: exact in any order. -#}
unit_bin_sums as (
    select
        *,
        sum(n_events) over unit_bins_ascending as unit_cumulative,
        sum(n_events) over (partition by experiment_id, arm, client_id, as_of_date, metric) as unit_events,
        row_number() over unit_bins_ascending = 1 as is_first_bin
    from unit_bins
    window unit_bins_ascending as (
        partition by experiment_id, arm, client_id, as_of_date, metric
        order by value_bin
        rows between unbounded preceding and current row
    )
),

bin_cells as (
    select
        unit_bin_sums.experiment_id,
        unit_bin_sums.arm,
        unit_bin_sums.as_of_date,
        {% for column in segment_columns() %}units.{{ column }},
        {% endfor -%}
        unit_bin_sums.metric,
        unit_bin_sums.value_bin,
        unit_bin_sums.n_events,
        unit_bin_sums.n_events as s_events,
        unit_bin_sums.n_events * unit_bin_sums.unit_events as sn_events,
        unit_bin_sums.n_events * (2 * unit_bin_sums.unit_cumulative - unit_bin_sums.n_events) as s2_increments,
        if(unit_bin_sums.is_first_bin, 1L, 0L) as units,
        if(unit_bin_sums.is_first_bin, unit_bin_sums.unit_events * unit_bin_sums.unit_events, 0L) as n2_units
    from unit_bin_sums
    inner join units
        on unit_bin_sums.experiment_id = units.experiment_id
        and unit_bin_sums.arm = units.arm
        and unit_bin_sums.client_id = units.client_id
        and unit_bin_sums.as_of_date = units.as_of_date
),

{{ segmented_quantile_ctes(
    'segmented_bins',
    'bin_cells',
    ['experiment_id', 'arm', 'as_of_date'],
    var('quantile_grid_coefficients'),
    metric_segment_filter('targets.metric', 'groups.segment_type'),
    sums=['s_events', 'sn_events', 's2_increments', 'units', 'n2_units'],
) }},

{#- One row per quantile target; sum_n is the histogram's events, n_events. -#}
final as (
    select
        experiment_id,
        metric,
        segment_type,
        segment_value,
        arm,
        as_of_date,
        units_total as n_units,
        quantile_p,
        quantile_value,
        cast(n_events as double) as n_events,
        cast(s_events_at_quantile as double) as sum_s,
        cast(s2_increments_at_quantile as double) as sum_s2,
        cast(n_events as double) as sum_n,
        cast(n2_units_total as double) as sum_n2,
        cast(sn_events_at_quantile as double) as sum_sn,
        transform(grid, g -> g.grid_p) as grid_p,
        transform(grid, g -> g.grid_value) as grid_value
    from segmented_bins_quantiles
)

select * from final
