-- TEST STAND-IN: gold.metric_values_to_date (contract columns) from stand_in_events: experiment
-- to date through each as_of_date, plus request_latency_p at p50/p90/p95/p99.
with dated as (
    select events.*, days.as_of_date, segment.segment_type, segment.segment_value
    from stand_in_events as events
    inner join (select distinct event_date as as_of_date from stand_in_events) as days
        on events.event_date <= days.as_of_date
    lateral view inline(array(
        named_struct('segment_type', 'overall', 'segment_value', 'all'),
        named_struct('segment_type', 'platform', 'segment_value', events.platform)
    )) segment
),

means as (
    select experiment_id, arm, metric, metric_kind, segment_type, segment_value, as_of_date,
           cast(null as double) as quantile_p, sum(y) / nullif(sum(x), 0) as value,
           count(distinct client_id) as n_units, count(*) as n_events
    from dated
    group by experiment_id, arm, metric, metric_kind, segment_type, segment_value, as_of_date
),

quantiles as (
    select experiment_id, arm, 'request_latency_p' as metric, 'quantile' as metric_kind,
           segment_type, segment_value, as_of_date, q.p as quantile_p, q.v as value, n_units, n_events
    from (
        select experiment_id, arm, segment_type, segment_value, as_of_date,
               percentile_approx(raw, array(0.5D, 0.9D, 0.95D, 0.99D), 10000) as values,
               count(distinct client_id) as n_units, count(*) as n_events
        from dated
        where metric = 'request_latency'
        group by experiment_id, arm, segment_type, segment_value, as_of_date
    ) as per_cell
    lateral view inline(arrays_zip(array(0.5D, 0.9D, 0.95D, 0.99D), per_cell.values)) q as p, v
)

select * from means
union all
select * from quantiles
