{#- Scorecards: each metric's experiment-to-date value per experiment x arm x segment x
    as_of_date (x quantile_p), read off the sufficient statistics. -#}
{{ config(
    partition_by=['as_of_date'],
    replace_where=open_days_predicate('as_of_date'),
) }}

with sufficient_stats as (
    select * from {{ ref('experiment_sufficient_stats') }}
    where {{ in_run_window('as_of_date') }}
),

final as (
    select
        experiment_id,
        arm,
        metric,
        metric_kind,
        segment_type,
        segment_value,
        as_of_date,
        quantile_p,
        case metric_kind
            when 'ratio' then sum_y / nullif(sum_x, 0)
            when 'quantile' then quantile_value
            else sum_y / n_units
        end as value,
        n_units,
        cast(n_events as bigint) as n_events
    from sufficient_stats
)

select * from final
