{#- The network-condition segments in their natural order, for Superset's charts, which
    otherwise sort labels alphabetically (">=200ms" before "<50ms", "bandwidth_bucket" before
    "rtt_bucket"). Every segment type but platform (the dashboards' filter), in the order of
    macros/segments.sql segment_columns() (network type, the RTT, loss and bandwidth buckets, the
    lab's network condition and its rtt, loss, burst and bandwidth values), has a row without a
    value giving its type_position; the bucket types (dbt var segment_buckets) have a row per
    label giving its position from the lowest bucket up. The other types' values (the lab's
    '20ms', '2%', '20Mbps', 'unlimited', from lab/config.py Condition.labels) are not known
    before the lab runs: they sort by their first number, unnumbered last, as the report sorts
    buckets (reports/fmt.py bucket_order); the dataset experiment_comparisons does that. A view
    over the macro and the var only (no table is read). -#}
{{ config(materialized='view') }}

{%- set buckets = var('segment_buckets') %}
{%- set rows = [] %}
{%- for segment_type in segment_columns() if segment_type != 'platform' %}
    {%- set type_position = loop.index %}
    {%- do rows.append((segment_type, none, type_position, none)) %}
    {%- for label in buckets.get(segment_type, {}).get('labels', []) %}
        {%- do rows.append((segment_type, label, type_position, loop.index)) %}
    {%- endfor %}
{%- endfor %}

select * from values
{%- for row in rows %}
    ('{{ row[0] }}', {% if row[1] is none %}cast(null as string){% else %}'{{ row[1] | replace("\\", "\\\\") | replace("'", "\\'") }}'{% endif %},
     {{ row[2] }}, {% if row[3] is none %}cast(null as int){% else %}{{ row[3] }}{% endif %}){{ ',' if not loop.last }}
{%- endfor %}
as segment_order (segment_type, segment_value, type_position, position)
