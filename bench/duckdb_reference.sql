-- DuckDB yardstick: the per-arm sufficient statistics of the thin path's three metrics, from
-- the same bronze Parquet files the Spark path reads (lists substituted by bench/thin_path.py).
-- Mirrors models/intermediate/* and models/marts/experiment_sufficient_stats.sql for one day.
with http as (
    select e.key as experiment_id, e.value as arm, client_id, platform, latency_ms
    from (select *, unnest(map_entries(experiments)) as e from read_parquet({http_files}))
),
video as (
    select e.key as experiment_id, e.value as arm, client_id, platform, rebuffer_count
    from (select *, unnest(map_entries(experiments)) as e from read_parquet({video_files}))
),
http_units as (
    select experiment_id, arm, client_id, min(platform) as platform,
           count(*) as requests, sum(latency_ms) as latency_ms_sum
    from http group by all
),
video_units as (
    select experiment_id, arm, client_id, min(platform) as platform,
           count(*) as playbacks, sum(rebuffer_count) as rebuffer_count_sum
    from video group by all
),
unit_values as (
    select experiment_id, arm, platform, 'request_latency_per_client' as metric,
           latency_ms_sum / requests as y, null::double as x from http_units
    union all
    select experiment_id, arm, platform, 'request_latency', latency_ms_sum, requests::double from http_units
    union all
    select experiment_id, arm, platform, 'rebuffers_per_playback', rebuffer_count_sum::double, playbacks::double
    from video_units
),
segmented as (
    select *, 'overall' as segment_type, 'all' as segment_value from unit_values
    union all
    select *, 'platform', platform from unit_values
)
select experiment_id, metric, segment_type, segment_value, arm,
       count(*) as n_units, sum(y) as sum_y, sum(y * y) as sum_y2,
       sum(x) as sum_x, sum(x * x) as sum_x2, sum(x * y) as sum_xy
from segmented
group by all
