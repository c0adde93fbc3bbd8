{#- Every row-level check of a model in one query (one scan, one dbt node): a row per failed
    check with the number of offending rows (or duplicated keys). Each dbt test node costs a
    Spark query and dbt's per-node overhead, so the model's checks are batched here instead of
    one node per check; the predicates are those of the separate generic tests:
      not_null           columns that must not be null (any null fails the row);
      unique             the model's grain: key combinations occurring more than once fail;
      accepted_values    {column: [values]}: a non-null value outside the list fails
                         (dbt's accepted_values: nulls pass);
      expressions        arithmetic invariants: a row where one is not true fails. -#}
{% test table_checks(model, not_null=[], unique=[], accepted_values={}, expressions=[]) %}
{%- set checks = [] -%}
{%- if not_null -%}
    {%- do checks.append(('not_null(' ~ (not_null | join(', ')) ~ ')',
        (not_null | join(' is null or ')) ~ ' is null')) -%}
{%- endif -%}
{%- for column, values in accepted_values.items() -%}
    {%- do checks.append(('accepted_values(' ~ column ~ ')',
        'coalesce(' ~ column ~ " not in ('" ~ (values | join("', '")) ~ "'), false)")) -%}
{%- endfor -%}
{%- for expression in expressions -%}
    {%- do checks.append(('expression ' ~ loop.index, 'not coalesce(' ~ expression ~ ', false)')) -%}
{%- endfor %}
with
{%- if unique %}
keyed as (
    select
        count(*) as occurrences
        {%- for label, predicate in checks %},
        count_if({{ predicate }}) as check_{{ loop.index }}
        {%- endfor %}
    from {{ model }}
    group by {{ unique | join(', ') }}
),

checked as (
    select
        count_if(occurrences > 1) as check_0
        {%- for label, predicate in checks %},
        coalesce(sum(check_{{ loop.index }}), 0) as check_{{ loop.index }}
        {%- endfor %}
    from keyed
),
{%- else %}
checked as (
    select
        cast(0 as bigint) as check_0
        {%- for label, predicate in checks %},
        count_if({{ predicate }}) as check_{{ loop.index }}
        {%- endfor %}
    from {{ model }}
),
{%- endif %}

failures as (
    select stack(
        {{ checks | length + 1 }},
        'unique({{ unique | join(", ") }})', check_0
        {%- for label, predicate in checks %},
        '{{ label | replace("'", "") }}', check_{{ loop.index }}
        {%- endfor %}
    ) as (failed_check, failing_rows)
    from checked
)

select * from failures where failing_rows > 0
{% endtest %}
