{{ config(
    partition_by=['as_of_date'],
    replace_where="as_of_date between " ~ first_open_day() ~ " and " ~ run_day(),
) }}

with arms as (
    select * from {{ ref('stg_registry__experiment_arms') }}
),

http_unit_days as (
    select * from {{ ref('int_http_transactions_aggregated_to_unit_days') }}
),

video_unit_days as (
    select * from {{ ref('int_video_playbacks_aggregated_to_unit_days') }}
),

as_of_dates as (
    -- experiment-to-date results for each day a run may still change
    select explode(sequence(
        {% if is_incremental() %}{{ first_open_day() }}{% else %}(select min(start_date) from arms){% endif %},
        {{ run_day() }}
    )) as as_of_date
),

http_units as (
    select
        http_unit_days.experiment_id,
        http_unit_days.arm,
        http_unit_days.client_id,
        as_of_dates.as_of_date,
        min(http_unit_days.platform) as platform,
        sum(http_unit_days.requests) as requests,
        sum(http_unit_days.latency_ms_sum) as latency_ms_sum
    from http_unit_days
    inner join arms
        on http_unit_days.experiment_id = arms.experiment_id and http_unit_days.arm = arms.arm
    inner join as_of_dates
        on http_unit_days.event_date between arms.start_date and as_of_dates.as_of_date
    group by 1, 2, 3, 4
),

video_units as (
    select
        video_unit_days.experiment_id,
        video_unit_days.arm,
        video_unit_days.client_id,
        as_of_dates.as_of_date,
        min(video_unit_days.platform) as platform,
        sum(video_unit_days.playbacks) as playbacks,
        sum(video_unit_days.rebuffer_count_sum) as rebuffer_count_sum
    from video_unit_days
    inner join arms
        on video_unit_days.experiment_id = arms.experiment_id and video_unit_days.arm = arms.arm
    inner join as_of_dates
        on video_unit_days.event_date between arms.start_date and as_of_dates.as_of_date
    group by 1, 2, 3, 4
),

unit_values as (
    select
        experiment_id, arm, as_of_date, platform,
        'request_latency_per_client' as metric, 'mean' as metric_kind,
        latency_ms_sum / requests as y, cast(null as double) as x
    from http_units
    union all
    select
        experiment_id, arm, as_of_date, platform,
        'request_latency' as metric, 'ratio' as metric_kind,
        latency_ms_sum as y, cast(requests as double) as x
    from http_units
    union all
    select
        experiment_id, arm, as_of_date, platform,
        'rebuffers_per_playback' as metric, 'ratio' as metric_kind,
        cast(rebuffer_count_sum as double) as y, cast(playbacks as double) as x
    from video_units
),

stats as (
    {{ sufficient_statistics('unit_values') }}
),

final as (
    select
        stats.experiment_id,
        stats.metric,
        stats.metric_kind,
        false as is_guardrail,
        stats.segment_type,
        stats.segment_value,
        stats.arm,
        arms.is_control,
        stats.as_of_date,
        stats.n_units,
        stats.sum_y,
        stats.sum_y2,
        stats.sum_x,
        stats.sum_x2,
        stats.sum_xy
    from stats
    inner join arms
        on stats.experiment_id = arms.experiment_id and stats.arm = arms.arm
)

select * from final
