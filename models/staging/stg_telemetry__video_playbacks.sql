with source as (
    select * from {{ source('bronze', 'video_playbacks') }}
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
        -- measures
        time_to_first_frame_ms,
        watch_time_ms,
        rebuffer_count,
        rebuffer_time_ms,
        mean_bandwidth_kbps,
        bitrate_kbps,
        chunks,
        media_bytes,
        -- dates and timestamps
        event_time as event_at,
        event_date
    from source
)

select * from renamed
