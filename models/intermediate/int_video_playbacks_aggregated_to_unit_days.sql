{{ config(
    partition_by=['event_date'],
    replace_where="event_date between " ~ first_open_day() ~ " and " ~ run_day(),
) }}

with playbacks as (
    select * from {{ ref('stg_telemetry__video_playbacks') }}
    where event_date <= {{ run_day() }}
    {% if is_incremental() %}
        and event_date >= {{ first_open_day() }}
    {% endif %}
),

exposed as (
    select
        playbacks.*,
        assignment.experiment_id,
        assignment.arm
    from playbacks
    lateral view explode(playbacks.experiments) assignment as experiment_id, arm
),

unit_days as (
    select
        experiment_id,
        arm,
        client_id,
        event_date,
        min(platform) as platform,
        min(network_type) as network_type,
        count(*) as playbacks,
        sum(rebuffer_count) as rebuffer_count_sum,
        sum(rebuffer_time_ms) as rebuffer_time_ms_sum,
        sum(watch_time_ms) as watch_time_ms_sum,
        sum(time_to_first_frame_ms) as time_to_first_frame_ms_sum,
        sum(mean_bandwidth_kbps) as mean_bandwidth_kbps_sum
    from exposed
    group by experiment_id, arm, client_id, event_date
)

select * from unit_days
