with source as (
    select * from {{ source('bronze', 'multipath_paths') }}
    {{ where_finished_upload_day() }}
),

renamed as (
    select
        -- ids
        event_id,
        client_id,
        session_id,
        connection_id,
        path_id,
        -- dimensions
        platform,
        network_type,
        experiments,
        path_network_type,
        -- measures
        srtt_ms,
        bytes as path_bytes,
        reinjected_bytes,
        packets_lost,
        -- dates and timestamps
        event_time as event_at,
        event_date
    from source
)

select * from renamed
