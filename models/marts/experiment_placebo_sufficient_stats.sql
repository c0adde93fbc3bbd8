{#- The daily A/A placebo on each experiment's own data (docs/stats.md, "Health checks"): the
    control arm's units re-split into two pseudo-arms 'a' and 'b' by a salted hash, once per
    placebo split (var placebo_splits), with the experiment-to-date sufficient statistics of
    every metric per split and pseudo-arm in the columns of experiment_sufficient_stats
    (overall segment only), so the stats engine runs every estimator of the real comparison on
    them. Each look is split afresh (macro placebo_arm). Quantile metrics, whose histograms cost
    a pass over every unit's value bins per split, are formed for the first
    placebo_quantile_splits splits only. The known-effect canary: on split 0 a third pseudo-arm
    'b_canary', pseudo-arm b's units with every value multiplied by canary_factor (a whole number
    of quantile bins) before the sums are formed; proportions are 0/1 and have no canary.
    Incremental runs form the run day's look only (macro placebo_looks). -#}
{{ config(
    partition_by=['as_of_date'],
    replace_where='as_of_date = ' ~ run_day(),
) }}

with arms as (
    select * from {{ ref('stg_registry__experiment_arms') }}
),

registry as (
    {{ metric_registry_rows() }}
),

experiments as (
    select * from {{ ref('int_experiments_scheduled_to_dates') }}
    where {{ placebo_looks('as_of_date') }}
),

units as (
    select * from {{ ref('int_experiment_units_segmented_to_dates') }}
    where {{ placebo_looks('as_of_date') }}
),

unit_metrics as (
    select * from {{ ref('int_experiment_unit_metrics_aggregated_to_dates') }}
    where {{ placebo_looks('as_of_date') }}
),

binned as (
    select * from {{ ref('int_quantile_values_binned_to_client_days') }}
    where event_date <= {{ run_day() }}
),

control_units as (
    select
        units.experiment_id,
        units.arm as control_arm,
        units.client_id,
        units.as_of_date,
        experiments.start_date
    from units
    inner join arms
        on units.experiment_id = arms.experiment_id
        and units.arm = arms.arm
        and arms.is_control
    inner join experiments
        on units.experiment_id = experiments.experiment_id
        and units.as_of_date = experiments.as_of_date
),

split_units as (
    select
        control_units.experiment_id,
        control_units.control_arm,
        control_units.client_id,
        control_units.as_of_date,
        split.placebo_split,
        {{ placebo_arm('control_units.experiment_id', 'control_units.client_id', 'control_units.as_of_date', 'split.placebo_split') }} as arm
    from control_units
    lateral view explode(sequence(0, {{ var('placebo_splits') }} - 1)) split as placebo_split
),

{#- Every pseudo-arm of every split; canary_bins = 0 but for the canary. -#}
pseudo_arms as (
    select experiment_id, control_arm, client_id, as_of_date, placebo_split, arm, 0 as canary_bins
    from split_units
    union all
    select experiment_id, control_arm, client_id, as_of_date, placebo_split, 'b_canary' as arm,
        {{ var('placebo_canary_bins') }} as canary_bins
    from split_units
    where placebo_split = 0 and arm = 'b'
),

unit_values as (
    select
        pseudo_arms.experiment_id,
        pseudo_arms.placebo_split,
        pseudo_arms.arm,
        pseudo_arms.as_of_date,
        unit_metrics.metric,
        unit_metrics.n_events,
        unit_metrics.pre_n_events,
        {{ unit_value('registry.metric_kind', 'unit_metrics.numerator', 'unit_metrics.denominator', 'unit_metrics.n_events') }}
            * pow(1.0 + {{ var('quantile_bin_width') }}, pseudo_arms.canary_bins) as y,
        case when registry.metric_kind = 'ratio' then unit_metrics.denominator end as x,
        {{ unit_value('registry.metric_kind', 'unit_metrics.pre_numerator', 'unit_metrics.pre_denominator', 'unit_metrics.pre_n_events') }} as c,
        case when registry.metric_kind = 'ratio' then unit_metrics.pre_denominator end as d
    from unit_metrics
    inner join pseudo_arms
        on unit_metrics.experiment_id = pseudo_arms.experiment_id
        and unit_metrics.arm = pseudo_arms.control_arm
        and unit_metrics.client_id = pseudo_arms.client_id
        and unit_metrics.as_of_date = pseudo_arms.as_of_date
    inner join registry
        on unit_metrics.metric = registry.metric
    where pseudo_arms.canary_bins = 0 or registry.metric_kind <> 'proportion'
),

moments as (
    select
        experiment_id,
        metric,
        placebo_split,
        arm,
        as_of_date,
        {{ moment_sums() }}
    from unit_values
    group by experiment_id, metric, placebo_split, arm, as_of_date
),

{#- Quantile metrics: the control units' value bins to date, as
    int_quantile_statistics_aggregated_to_arms forms them for the real arms. -#}
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

control_bins as (
    select
        control_units.experiment_id,
        control_units.client_id,
        control_units.as_of_date,
        enrolled_bins.metric,
        enrolled_bins.value_bin,
        sum(enrolled_bins.n_events) as n_events
    from enrolled_bins
    inner join control_units
        on enrolled_bins.experiment_id = control_units.experiment_id
        and enrolled_bins.arm = control_units.control_arm
        and enrolled_bins.client_id = control_units.client_id
        and enrolled_bins.event_date between control_units.start_date and control_units.as_of_date
    group by 1, 2, 3, 4, 5
),

{#- The unit's running count and total (the same in every split: formed once, before the
    units are spread over the splits). -#}
unit_bin_sums as (
    select
        *,
        sum(n_events) over unit_bins_ascending as unit_cumulative,
        sum(n_events) over (partition by experiment_id, client_id, as_of_date, metric) as unit_events,
        row_number() over unit_bins_ascending = 1 as is_first_bin
    from control_bins
    window unit_bins_ascending as (
        partition by experiment_id, client_id, as_of_date, metric
        order by value_bin
        rows between unbounded preceding and current row
    )
),

{#- One cell per unit, bin and pseudo-arm; no segment but overall (the segment columns are
    null). The canary moves every positive value by canary_bins bins. -#}
bin_cells as (
    select
        pseudo_arms.experiment_id,
        pseudo_arms.arm,
        pseudo_arms.as_of_date,
        pseudo_arms.placebo_split,
        {% for column in segment_columns() %}cast(null as string) as {{ column }},
        {% endfor -%}
        unit_bin_sums.metric,
        case when unit_bin_sums.value_bin = {{ zero_bin() }} then unit_bin_sums.value_bin
            else unit_bin_sums.value_bin + pseudo_arms.canary_bins end as value_bin,
        unit_bin_sums.n_events,
        unit_bin_sums.n_events as s_events,
        unit_bin_sums.n_events * unit_bin_sums.unit_events as sn_events,
        unit_bin_sums.n_events * (2 * unit_bin_sums.unit_cumulative - unit_bin_sums.n_events) as s2_increments,
        if(unit_bin_sums.is_first_bin, 1L, 0L) as units,
        if(unit_bin_sums.is_first_bin, unit_bin_sums.unit_events * unit_bin_sums.unit_events, 0L) as n2_units
    from unit_bin_sums
    inner join pseudo_arms
        on unit_bin_sums.experiment_id = pseudo_arms.experiment_id
        and unit_bin_sums.client_id = pseudo_arms.client_id
        and unit_bin_sums.as_of_date = pseudo_arms.as_of_date
    where pseudo_arms.placebo_split < {{ var('placebo_quantile_splits') }}
),

{{ quantile_ctes(
    'placebo_bins',
    'bin_cells',
    ['experiment_id', 'arm', 'as_of_date', 'placebo_split'],
    var('quantile_grid_coefficients'),
    sums=['s_events', 'sn_events', 's2_increments', 'units', 'n2_units'],
) }},

statistics as (
    select
        experiment_id, metric, placebo_split, arm, as_of_date, n_units,
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
        experiment_id, metric, placebo_split, arm, as_of_date, units_total as n_units,
        {%- for column in ['sum_y', 'sum_y2', 'sum_x', 'sum_x2', 'sum_xy', 'sum_c', 'sum_c2', 'sum_yc', 'sum_d', 'sum_d2', 'sum_cd', 'sum_yd', 'sum_xc', 'sum_xd'] %}
        cast(null as double) as {{ column }},
        {%- endfor %}
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
    from placebo_bins_quantiles
),

final as (
    select
        statistics.experiment_id,
        statistics.metric,
        registry.metric_kind,
        registry.is_guardrail,
        'overall' as segment_type,
        'all' as segment_value,
        statistics.arm,
        statistics.arm = 'a' as is_control,
        statistics.as_of_date,
        statistics.placebo_split,
        case when statistics.arm = 'b_canary' then {{ canary_factor() }} else 1.0 end as canary_factor,
        {{ sufficient_stat_columns('statistics') }}
    from statistics
    inner join registry
        on statistics.metric = registry.metric
)

select * from final
