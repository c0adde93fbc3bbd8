-- TEST STAND-IN (tests/serving only, never product code): the events behind the contract's
-- gold.metric_values_* marts, derived from the pipeline's real bronze tables, for as long as
-- models/ does not build those marts. One row per event: experiment, arm, platform, day, metric
-- numerator (y) and denominator (x) so that the metric is sum(y) / sum(x).
select e.key as experiment_id, e.value as arm, client_id, platform, event_date,
       'request_latency' as metric, 'ratio' as metric_kind, latency_ms as y, 1.0 as x, latency_ms as raw
from {bronze}.http_transactions lateral view explode(experiments) e as key, value
where latency_ms is not null
union all
select e.key, e.value, client_id, platform, event_date, 'search_latency', 'ratio', latency_ms, 1.0, latency_ms
from {bronze}.search_queries lateral view explode(experiments) e as key, value
where latency_ms is not null
union all
select e.key, e.value, client_id, platform, event_date, 'mtbr', 'ratio', watch_time_ms / 1000.0, cast(rebuffer_count as double), null
from {bronze}.video_playbacks lateral view explode(experiments) e as key, value
union all
select e.key, e.value, client_id, platform, event_date, 'rebuffers_per_playback', 'ratio', cast(rebuffer_count as double), 1.0, null
from {bronze}.video_playbacks lateral view explode(experiments) e as key, value
union all
select e.key, e.value, client_id, platform, event_date, 'mean_client_bandwidth', 'ratio', mean_bandwidth_kbps, 1.0, null
from {bronze}.video_playbacks lateral view explode(experiments) e as key, value
where mean_bandwidth_kbps is not null
