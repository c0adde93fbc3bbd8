with source as (
    select * from {{ source('bronze', 'search_queries') }}
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
        query_index,
        -- measures
        latency_ms,
        time_to_abandon_ms,
        response_bytes,
        hol_blocked_ms,
        -- booleans
        abandoned as is_abandoned,
        -- dates and timestamps
        event_time as event_at,
        event_date
    from source
)

select * from renamed
