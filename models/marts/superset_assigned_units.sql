{#- Units assigned to each arm of an experiment through each as_of_date (every unit seen with
    the assignment since the experiment started), overall ('All platforms') and per platform:
    the denominators Superset's scorecard shows beside the sample-ratio test. Counted from the
    units table, not from one metric's n_units (a unit without that metric's events is still
    assigned). A view, so the counts follow the units table's late-data revisions; two
    aggregates in a union (not grouping sets), so a query's filter on the experiment and the
    date reaches the units table's partitions. -#}
{{ config(materialized='view') }}

with units as (
    select * from {{ ref('int_experiment_units_segmented_to_dates') }}
)

select experiment_id, arm, as_of_date, 'All platforms' as platform, count(*) as n_units
from units
group by experiment_id, arm, as_of_date

union all

select experiment_id, arm, as_of_date, coalesce(platform, 'unknown') as platform, count(*) as n_units
from units
group by experiment_id, arm, as_of_date, coalesce(platform, 'unknown')
