with source as (
    select * from {{ source('bronze', 'connections') }}
    {{ where_finished_upload_day() }}
),

renamed as (
    select
        -- ids
        event_id,
        client_id,
        session_id,
        connection_id,
        -- dimensions
        platform,
        network_type,
        experiments,
        congestion_control,
        scheduler,
        initial_window_packets,
        path_count,
        -- measures
        srtt_ms,
        min_rtt_ms,
        packets_sent,
        packets_lost,
        packets_retransmitted,
        close_delay_ms,
        handshake_ms,
        bytes_sent,
        bytes_received,
        cwnd_bytes,
        delivery_rate_kbps,
        -- booleans
        is_zero_rtt,
        pacing as is_paced,
        -- dates and timestamps
        event_time as event_at,
        event_date
    from source
)

select * from renamed
