{#- The checks of a metric registry entry beyond what macros/metrics.sql needs to build SQL:
    known keys, the required text fields, direction, guardrail, and the display facts (label,
    group, scale). The pydantic model quicexp/metrics.py applies the same rules; the test
    tests/test_metric_registry.py runs both over the same good and bad entries. -#}

{% macro check_metric_fields(raw) %}
    {%- set name = raw.get('name') -%}
    {%- set known = ['name', 'description', 'kind', 'source', 'numerator', 'denominator', 'value',
                     'filter', 'quantiles', 'histogram_of', 'segments', 'unit', 'direction',
                     'guardrail', 'label', 'group', 'scale'] -%}
    {%- for key in raw if key not in known -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has unknown field " ~ key) -%}
    {%- endfor -%}
    {%- for key in ['description', 'unit', 'label'] -%}
        {%- if raw.get(key) is none or raw.get(key) is mapping or (raw.get(key) is iterable and raw.get(key) is not string) or (raw.get(key) | string) == '' -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " needs a " ~ key) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if raw.get('direction') not in ['increase', 'decrease'] -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has direction " ~ raw.get('direction') ~ ", not increase or decrease") -%}
    {%- endif -%}
    {%- if 'guardrail' in raw and not (raw['guardrail'] is sameas true or raw['guardrail'] is sameas false) -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has a guardrail that is not true or false") -%}
    {%- endif -%}
    {%- if 'group' in raw and raw['group'] not in ['latency', 'video', 'transport', 'qlog', 'other'] -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has unknown group " ~ raw['group']) -%}
    {%- endif -%}
    {%- if 'scale' in raw and not (raw['scale'] is number and raw['scale'] is not sameas true and raw['scale'] is not sameas false and raw['scale'] > 0) -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has a scale that is not a positive number") -%}
    {%- endif -%}
{% endmacro %}
