{#- One row per experiment unit per non-quantile metric per as_of_date: the unit's
    experiment-to-date sums (numerator, denominator, events) and its pre-period sums for
    CUPED (all of the client's events in the pre-period window, whatever it was enrolled
    in; zero when it had none). -#}
{{ config(
    partition_by=['as_of_date'],
    replace_where=open_days_predicate('as_of_date'),
) }}

with experiments as (
    select * from {{ ref('int_experiments_scheduled_to_dates') }}
    where {{ in_run_window('as_of_date') }}
),

metric_sums as (
    select * from {{ ref('int_metric_sums_aggregated_to_client_days') }}
    where event_date <= {{ run_day() }}
),

enrolled as (
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

pre_periods as (
    select distinct experiment_id, pre_period_start_date, pre_period_end_date from experiments
),

to_date as (
    select
        experiments.experiment_id,
        enrolled.arm,
        enrolled.client_id,
        experiments.as_of_date,
        enrolled.metric,
        sum(enrolled.numerator) as numerator,
        sum(enrolled.denominator) as denominator,
        sum(enrolled.n_events) as n_events
    from enrolled
    inner join experiments
        on enrolled.experiment_id = experiments.experiment_id
        and enrolled.event_date between experiments.start_date and experiments.as_of_date
    group by 1, 2, 3, 4, 5
),

pre_period as (
    select
        pre_periods.experiment_id,
        metric_sums.client_id,
        metric_sums.metric,
        sum(metric_sums.numerator) as numerator,
        sum(metric_sums.denominator) as denominator,
        sum(metric_sums.n_events) as n_events
    from metric_sums
    inner join pre_periods
        on metric_sums.event_date
        between pre_periods.pre_period_start_date and pre_periods.pre_period_end_date
    group by 1, 2, 3
),

final as (
    select
        to_date.experiment_id,
        to_date.arm,
        to_date.client_id,
        to_date.as_of_date,
        to_date.metric,
        to_date.numerator,
        to_date.denominator,
        to_date.n_events,
        coalesce(pre_period.numerator, 0.0) as pre_numerator,
        coalesce(pre_period.denominator, 0.0) as pre_denominator,
        coalesce(pre_period.n_events, 0) as pre_n_events
    from to_date
    left join pre_period
        on to_date.experiment_id = pre_period.experiment_id
        and to_date.client_id = pre_period.client_id
        and to_date.metric = pre_period.metric
)

select * from final
