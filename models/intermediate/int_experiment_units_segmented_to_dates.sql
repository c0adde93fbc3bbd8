{#- One row per experiment unit (client in an arm) per as_of_date it has been seen by:
    its segments. platform and network_type are the client's (the smallest value if it ever
    reported two); the network buckets come from the first day with connections (or qlog
    traces) since the experiment started, and the network condition (with its values) from the
    first day a qlog sidecar line named one, so a unit's segment does not move once known. -#}
{{ config(
    partition_by=['as_of_date'],
    replace_where=open_days_predicate('as_of_date'),
) }}

with experiments as (
    select * from {{ ref('int_experiments_scheduled_to_dates') }}
    where {{ in_run_window('as_of_date') }}
),

metric_sums as (
    select * from {{ ref('int_metric_sums_aggregated_to_client_days') }}
    where event_date <= {{ run_day() }}
),

networks as (
    select * from {{ ref('int_client_networks_aggregated_to_days') }}
    where event_date <= {{ run_day() }}
),

enrolled_days as (
    select
        assignment.key as experiment_id,
        assignment.value as arm,
        metric_sums.client_id,
        metric_sums.event_date,
        min(metric_sums.platform) as platform,
        min(metric_sums.network_type) as network_type
    from metric_sums
    lateral view inline(metric_sums.assignments) assignment
    group by 1, 2, 3, 4
),

units as (
    select
        experiments.experiment_id,
        enrolled_days.arm,
        enrolled_days.client_id,
        experiments.as_of_date,
        min(experiments.start_date) as start_date,
        min(enrolled_days.platform) as platform,
        min(enrolled_days.network_type) as network_type
    from enrolled_days
    inner join experiments
        on enrolled_days.experiment_id = experiments.experiment_id
        and enrolled_days.event_date between experiments.start_date and experiments.as_of_date
    group by 1, 2, 3, 4
),

first_networks as (
    select
        units.experiment_id,
        units.arm,
        units.client_id,
        units.as_of_date,
        min_by(
            named_struct(
                'rtt_ms', networks.min_rtt_ms,
                'loss_rate', networks.packets_lost / nullif(networks.packets_sent, 0),
                'bandwidth_kbps', networks.median_delivery_rate_kbps
            ),
            networks.event_date
        ) as network,
        {#- min_by skips the rows whose ordering value is null: days without a condition -#}
        min_by(
            named_struct(
                'name', networks.network_condition,
                'rtt', networks.condition_rtt,
                'loss', networks.condition_loss,
                'burst', networks.condition_burst,
                'bandwidth', networks.condition_bandwidth
            ),
            case when networks.network_condition is not null then networks.event_date end
        ) as condition
    from units
    inner join networks
        on units.client_id = networks.client_id
        and networks.event_date between units.start_date and units.as_of_date
    group by 1, 2, 3, 4
),

final as (
    select
        units.experiment_id,
        units.arm,
        units.client_id,
        units.as_of_date,
        coalesce(units.platform, 'unknown') as platform,
        coalesce(units.network_type, 'unknown') as network_type,
        {{ bucket('first_networks.network.rtt_ms', 'rtt_bucket') }} as rtt_bucket,
        {{ bucket('first_networks.network.loss_rate', 'loss_bucket') }} as loss_bucket,
        {{ bucket('first_networks.network.bandwidth_kbps', 'bandwidth_bucket') }} as bandwidth_bucket,
        first_networks.condition.name as network_condition,
        first_networks.condition.rtt as condition_rtt,
        first_networks.condition.loss as condition_loss,
        first_networks.condition.burst as condition_burst,
        first_networks.condition.bandwidth as condition_bandwidth
    from units
    left join first_networks
        on units.experiment_id = first_networks.experiment_id
        and units.arm = first_networks.arm
        and units.client_id = first_networks.client_id
        and units.as_of_date = first_networks.as_of_date
)

select * from final
