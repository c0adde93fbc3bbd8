with source as (
    select * from {{ source('bronze', 'header_compression') }}
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
        scheme as compression_scheme,
        -- measures
        requests as header_blocks,
        header_bytes_raw,
        header_bytes_compressed,
        header_hol_delay_ms,
        max_header_hol_ms,
        -- dates and timestamps
        event_time as event_at,
        event_date
    from source
)

select * from renamed
