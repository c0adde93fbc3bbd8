-- Per-unit (client) request latency of one experiment, straight from bronze: one row per client
-- and arm with its request count, mean and p95 latency. Parameters (Spark named markers):
--   :http_table   the bronze http_transactions table, e.g. 'bronze.http_transactions'
--   :experiment   the experiment id (key of the events' `experiments` map; its value is the arm)
--   :start_date / :end_date  the event dates to include (inclusive)
with requests as (
    select
        client_id,
        platform,
        network_type,
        experiments[:experiment] as arm,
        latency_ms
    from identifier(:http_table)
    where event_date between :start_date and :end_date
      and experiments[:experiment] is not null
      and latency_ms is not null
),

units as (
    select
        client_id,
        arm,
        min(platform) as platform,
        min(network_type) as network_type,
        count(*) as requests,
        avg(latency_ms) as mean_latency_ms,
        percentile_approx(latency_ms, 0.95) as p95_latency_ms
    from requests
    group by client_id, arm
)

select * from units
