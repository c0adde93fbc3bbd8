-- TEST STAND-IN: gold.metric_values_daily (contract columns) from stand_in_events.
select experiment_id, arm, metric, metric_kind, segment.segment_type, segment.segment_value, event_date,
       cast(null as double) as quantile_p,
       sum(y) / nullif(sum(x), 0) as value,
       count(distinct client_id) as n_units,
       count(*) as n_events
from stand_in_events
lateral view inline(array(
    named_struct('segment_type', 'overall', 'segment_value', 'all'),
    named_struct('segment_type', 'platform', 'segment_value', platform)
)) segment
group by experiment_id, arm, metric, metric_kind, segment.segment_type, segment.segment_value, event_date
