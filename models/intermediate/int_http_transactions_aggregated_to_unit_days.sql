{{ config(
    partition_by=['event_date'],
    replace_where="event_date between " ~ first_open_day() ~ " and " ~ run_day(),
) }}

with transactions as (
    select * from {{ ref('stg_telemetry__http_transactions') }}
    where event_date <= {{ run_day() }}
    {% if is_incremental() %}
        and event_date >= {{ first_open_day() }}
    {% endif %}
),

exposed as (
    select
        transactions.*,
        assignment.experiment_id,
        assignment.arm
    from transactions
    lateral view explode(transactions.experiments) assignment as experiment_id, arm
),

unit_days as (
    select
        experiment_id,
        arm,
        client_id,
        event_date,
        min(platform) as platform,
        min(network_type) as network_type,
        count(*) as requests,
        sum(latency_ms) as latency_ms_sum,
        sum(hol_blocked_ms) as hol_blocked_ms_sum,
        sum(response_bytes) as response_bytes_sum
    from exposed
    group by experiment_id, arm, client_id, event_date
)

select * from unit_days
