{#- One row per experiment per as_of_date on which it has experiment-to-date results: from
    its start_date to its end_date (or the run day while it runs), with its CUPED
    pre-period. Every run rebuilds it (a view): it is small and the registry can change. -#}
{{ config(materialized='view') }}

with arms as (
    select * from {{ ref('stg_registry__experiment_arms') }}
),

experiments as (
    select
        experiment_id,
        min(start_date) as start_date,
        max(end_date) as end_date
    from arms
    group by experiment_id
),

scheduled as (
    select
        experiment_id,
        start_date,
        end_date,
        date_sub(start_date, {{ var('cuped_pre_period_days') }}) as pre_period_start_date,
        date_sub(start_date, 1) as pre_period_end_date,
        explode(sequence(start_date, least(coalesce(end_date, {{ run_day() }}), {{ run_day() }}))) as as_of_date
    from experiments
    where start_date <= {{ run_day() }}
)

select * from scheduled
