with source as (
    select * from {{ source('bronze', 'http_transactions') }}
),

renamed as (
    select
        -- ids
        event_id,
        client_id,
        connection_id,
        -- dimensions
        platform,
        network_type,
        experiments,
        -- measures
        cast(latency_ms as double) as latency_ms,
        cast(hol_blocked_ms as double) as hol_blocked_ms,
        response_bytes,
        -- dates and timestamps
        event_time as event_at,
        event_date
    from source
)

select * from renamed
