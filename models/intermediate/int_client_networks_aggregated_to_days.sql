{#- Per client per day: the network the client's connections saw (base RTT, loss rate,
    median delivery rate), from which its network-condition segments are bucketed. -#}
{{ config(
    partition_by=['event_date'],
    replace_where=open_days_predicate('event_date'),
) }}

with connections as (
    select * from {{ ref('stg_telemetry__connections') }}
    where {{ in_run_window('event_date') }}
),

client_days as (
    select
        client_id,
        event_date,
        min(min_rtt_ms) as min_rtt_ms,
        sum(packets_lost) as packets_lost,
        sum(packets_sent) as packets_sent,
        percentile(delivery_rate_kbps, 0.5) as median_delivery_rate_kbps,
        count(*) as connections
    from connections
    group by client_id, event_date
)

select * from client_days
