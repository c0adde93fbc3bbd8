{#- The health checks' unit counts (stats/health.py, docs/stats.md "Health checks"): per
    experiment x arm x as_of_date, overall and per platform, the units assigned to the arm (every
    unit seen with the assignment since the experiment started, whatever it reported), those of
    them also seen in another arm of the experiment (crossover), and per segment the distinct
    units of the experiment and the distinct crossover units. -#}
{{ config(
    partition_by=['as_of_date'],
    replace_where=open_days_predicate('as_of_date'),
) }}

with arms as (
    select * from {{ ref('stg_registry__experiment_arms') }}
),

units as (
    select * from {{ ref('int_experiment_units_segmented_to_dates') }}
    where {{ in_run_window('as_of_date') }}
),

{#- A unit row is per arm: a unit seen in two arms of one experiment has two rows. -#}
unit_arms as (
    select
        experiment_id,
        client_id,
        as_of_date,
        count(*) as arms_seen,
        min(platform) as platform
    from units
    group by experiment_id, client_id, as_of_date
),

{#- Every row once per segment it is in: overall and its platform. -#}
per_arm as (
    select
        units.experiment_id,
        units.arm,
        units.as_of_date,
        segment.segment_type,
        segment.segment_value,
        count(*) as units,
        count_if(unit_arms.arms_seen > 1) as crossover_units
    from units
    inner join unit_arms
        on units.experiment_id = unit_arms.experiment_id
        and units.client_id = unit_arms.client_id
        and units.as_of_date = unit_arms.as_of_date
    lateral view inline(array(
        named_struct('segment_type', 'overall', 'segment_value', 'all'),
        named_struct('segment_type', 'platform', 'segment_value', units.platform)
    )) segment
    group by 1, 2, 3, 4, 5
),

{#- Distinct units per segment (a crossover unit in the segment of its smallest platform). -#}
per_segment as (
    select
        experiment_id,
        as_of_date,
        segment.segment_type,
        segment.segment_value,
        count(*) as experiment_units,
        count_if(arms_seen > 1) as experiment_crossover_units
    from unit_arms
    lateral view inline(array(
        named_struct('segment_type', 'overall', 'segment_value', 'all'),
        named_struct('segment_type', 'platform', 'segment_value', unit_arms.platform)
    )) segment
    group by 1, 2, 3, 4
),

final as (
    select
        per_arm.experiment_id,
        per_arm.arm,
        coalesce(arms.is_control, false) as is_control,
        per_arm.as_of_date,
        per_arm.segment_type,
        per_arm.segment_value,
        per_arm.units,
        per_arm.crossover_units,
        coalesce(per_segment.experiment_units, per_arm.units) as experiment_units,
        coalesce(per_segment.experiment_crossover_units, per_arm.crossover_units) as experiment_crossover_units
    from per_arm
    left join per_segment
        on per_arm.experiment_id = per_segment.experiment_id
        and per_arm.as_of_date = per_segment.as_of_date
        and per_arm.segment_type = per_segment.segment_type
        and per_arm.segment_value = per_segment.segment_value
    left join arms
        on per_arm.experiment_id = arms.experiment_id and per_arm.arm = arms.arm
)

select * from final
