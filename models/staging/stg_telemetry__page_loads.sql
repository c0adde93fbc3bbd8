with source as (
    select * from {{ source('bronze', 'page_loads') }}
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
        prioritization,
        -- measures
        page_load_time_ms,
        speed_index_ms,
        hol_blocked_bytes,
        resource_count,
        page_bytes,
        -- dates and timestamps
        event_time as event_at,
        event_date
    from source
)

select * from renamed
