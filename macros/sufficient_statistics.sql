{#- Aggregate per-unit metric values (y, and x for ratios) to per-arm sufficient statistics,
    for the overall population and for each platform. The input relation has one row per
    experiment_id x arm x as_of_date x metric x unit with columns metric_kind, platform, y, x. -#}
{% macro sufficient_statistics(unit_values) %}
    select
        unit_values.experiment_id,
        unit_values.metric,
        unit_values.metric_kind,
        segment.segment_type,
        segment.segment_value,
        unit_values.arm,
        unit_values.as_of_date,
        count(*) as n_units,
        sum(unit_values.y) as sum_y,
        sum(unit_values.y * unit_values.y) as sum_y2,
        sum(unit_values.x) as sum_x,
        sum(unit_values.x * unit_values.x) as sum_x2,
        sum(unit_values.x * unit_values.y) as sum_xy
    from {{ unit_values }} as unit_values
    lateral view inline(array(
        named_struct('segment_type', 'overall', 'segment_value', 'all'),
        named_struct('segment_type', 'platform', 'segment_value', unit_values.platform)
    )) segment
    group by 1, 2, 3, 4, 5, 6, 7
{% endmacro %}
