{#- Per client per day: the network the client's connections saw (base RTT, loss rate,
    median delivery rate), from which its network-condition buckets are bucketed, and the
    network condition its qlog sidecar lines named. The network comes from the day's
    `connection` events; a client-day with qlog traces and no connection event takes it from
    the traces (network_source 'qlog'): the smallest min RTT either end reported, the losses
    both ends declared over the packets they sent, the median goodput of its client traces. -#}
{{ config(
    partition_by=['event_date'],
    replace_where=open_days_predicate('event_date'),
) }}

with connections as (
    select * from {{ ref('stg_telemetry__connections') }}
    where {{ in_run_window('event_date') }}
),

traces as (
    select * from {{ ref('stg_telemetry__qlog_connections') }}
    where {{ in_run_window('event_date') }}
),

connection_days as (
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
),

{#- A client that named two conditions in a day is in the smallest (by name). -#}
trace_days as (
    select
        client_id,
        event_date,
        min(min_rtt_ms) as min_rtt_ms,
        sum(packets_lost) as packets_lost,
        sum(packets_sent) as packets_sent,
        percentile(
            case when vantage_point = 'client' then bytes_received * 8 / nullif(duration_ms, 0) end, 0.5
        ) as median_delivery_rate_kbps,
        count(distinct odcid) as connections,
        min_by(
            named_struct(
                'name', network_condition,
                'rtt', condition_rtt,
                'loss', condition_loss,
                'burst', condition_burst,
                'bandwidth', condition_bandwidth
            ),
            network_condition
        ) as condition
    from traces
    group by client_id, event_date
),

final as (
    select
        coalesce(connection_days.client_id, trace_days.client_id) as client_id,
        coalesce(connection_days.event_date, trace_days.event_date) as event_date,
        {%- for column in ['min_rtt_ms', 'packets_lost', 'packets_sent', 'median_delivery_rate_kbps', 'connections'] %}
        case when connection_days.client_id is not null then connection_days.{{ column }}
            else trace_days.{{ column }} end as {{ column }},
        {%- endfor %}
        case when connection_days.client_id is not null then 'connections' else 'qlog' end as network_source,
        trace_days.condition.name as network_condition,
        trace_days.condition.rtt as condition_rtt,
        trace_days.condition.loss as condition_loss,
        trace_days.condition.burst as condition_burst,
        trace_days.condition.bandwidth as condition_bandwidth
    from connection_days
    full outer join trace_days
        on connection_days.client_id = trace_days.client_id
        and connection_days.event_date = trace_days.event_date
)

select * from final
