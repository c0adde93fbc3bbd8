{#- qlog traces of real QUIC stacks (jobs/qlog, docs/qlog.md): one row per connection and
    vantage point (the client's and the server's trace of a connection are two rows). The
    sidecar's client, platform, network type and experiments map make these rows metric events
    like any other: a client seen only in qlog traces is an experiment unit of its arm. A trace
    its sidecar line marks invalid (a lab run during which the host dropped datagrams: the
    stack's losses are not the path's) stays in bronze and is left out here, so no metric and
    no unit comes from it. The sidecar's condition values (rtt, loss, burst, bandwidth) become
    columns: with the condition, the network-condition segments. -#}
{%- set columns = {
    'odcid': 'string', 'vantage_point': 'string', 'client_id': 'string', 'session_id': 'string',
    'platform': 'string', 'network_type': 'string', 'experiments': 'map<string,string>',
    'network_condition': 'string', 'condition_values': 'map<string,string>', 'invalid_reason': 'string',
    'qlog_version': 'string', 'started_at_source': 'string',
    'srtt_ms': 'double', 'srtt_median_ms': 'double', 'min_rtt_ms': 'double',
    'latest_rtt_ms': 'double', 'rtt_variance_ms': 'double', 'rtt_samples': 'bigint',
    'cwnd_bytes': 'bigint', 'max_cwnd_bytes': 'bigint', 'packets_sent': 'bigint',
    'packets_received': 'bigint', 'packets_lost': 'bigint', 'packets_dropped': 'bigint',
    'bytes_sent': 'bigint', 'bytes_received': 'bigint', 'handshake_ms': 'double',
    'duration_ms': 'double', 'started_at': 'timestamp', 'event_date': 'date', 'upload_date': 'date',
} -%}

with source as (
    select * from {{ optional_source('bronze', 'qlog_connections', columns) }}
    {{ where_finished_upload_day('qlog') }}
),

valid as (
    select * from source
    where invalid_reason is null
),

renamed as (
    select
        -- ids
        concat(odcid, '/', vantage_point) as trace_id,
        odcid,
        client_id,
        session_id,
        -- dimensions
        vantage_point,
        platform,
        network_type,
        experiments,
        network_condition,
        condition_values['rtt'] as condition_rtt,
        condition_values['loss'] as condition_loss,
        condition_values['burst'] as condition_burst,
        condition_values['bandwidth'] as condition_bandwidth,
        qlog_version,
        -- measures
        srtt_ms,
        srtt_median_ms,
        min_rtt_ms,
        latest_rtt_ms,
        rtt_variance_ms,
        rtt_samples,
        cwnd_bytes,
        max_cwnd_bytes,
        packets_sent,
        packets_received,
        packets_lost,
        packets_dropped,
        bytes_sent,
        bytes_received,
        handshake_ms,
        duration_ms,
        -- dates and timestamps
        started_at as event_at,
        started_at_source,
        event_date
    from valid
)

select * from renamed
