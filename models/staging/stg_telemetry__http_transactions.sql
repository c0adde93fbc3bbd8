with source as (
    select * from {{ source('bronze', 'http_transactions') }}
    {{ where_finished_upload_day() }}
),

renamed as (
    select
        -- ids
        event_id,
        client_id,
        session_id,
        connection_id,
        stream_id,
        -- dimensions
        platform,
        network_type,
        experiments,
        protocol,
        status_code,
        -- measures
        latency_ms,
        ttfb_ms,
        hol_blocked_ms,
        packets_lost,
        request_bytes,
        response_bytes,
        -- booleans
        new_connection as is_new_connection,
        -- dates and timestamps
        event_time as event_at,
        event_date
    from source
)

select * from renamed
