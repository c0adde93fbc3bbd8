{#- Segments: every unit belongs to 'overall' and to one value of each segment type; the
    combinations named in var segment_combinations give two-way segments such as
    platform×rtt_bucket = 'Windows|100-200ms'. -#}

{#- The columns of a unit row that name its segments (one segment type each). -#}
{% macro segment_columns() %}
    {{ return(['platform', 'network_type', 'rtt_bucket', 'loss_bucket', 'bandwidth_bucket']) }}
{% endmacro %}


{% macro segment_types() %}
    {%- set out = ['overall'] + segment_columns() -%}
    {%- for combo in var('segment_combinations', []) -%}
        {%- do out.append(combo | join('×')) -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}


{#- `lateral view` giving one row per segment the unit row `alias` belongs to
    (columns segment.segment_type, segment.segment_value). -#}
{% macro explode_segments(alias) %}
    lateral view inline(array(
        named_struct('segment_type', 'overall', 'segment_value', 'all')
        {%- for column in segment_columns() %},
        named_struct('segment_type', '{{ column }}', 'segment_value', {{ alias }}.{{ column }})
        {%- endfor %}
        {%- for combo in var('segment_combinations', []) %}
            {%- for column in combo if column not in segment_columns() %}
                {%- do exceptions.raise_compiler_error("segment_combinations: unknown segment type " ~ column) -%}
            {%- endfor %},
        named_struct(
            'segment_type', '{{ combo | join("×") }}',
            'segment_value', concat_ws('|', {% for column in combo %}{{ alias }}.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
        )
        {%- endfor %}
    )) segment
{% endmacro %}


{#- The value of segment type `segment_type` (an expression) for the unit row `alias`: what
    explode_segments gives that row for that type. -#}
{% macro segment_value_of(alias, segment_type) %}
    case {{ segment_type }}
        when 'overall' then 'all'
        {%- for column in segment_columns() %}
        when '{{ column }}' then {{ alias }}.{{ column }}
        {%- endfor %}
        {%- for combo in var('segment_combinations', []) %}
        when '{{ combo | join("×") }}'
            then concat_ws('|', {% for column in combo %}{{ alias }}.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
        {%- endfor %}
    end
{% endmacro %}


{#- Bucket label of a numeric expression from edges in a var, e.g. rtt edges [50, 100, 200]
    with unit 'ms' give '<50ms', '50-100ms', '100-200ms', '>=200ms'; null gives 'unknown'. -#}
{% macro bucket(expression, name) %}
    {%- set spec = var('segment_buckets')[name] -%}
    {%- set edges = spec['edges'] -%}
    {%- set labels = spec['labels'] -%}
    {%- if labels | length != edges | length + 1 -%}
        {%- do exceptions.raise_compiler_error("segment_buckets." ~ name ~ ": need one label more than edges") -%}
    {%- endif -%}
    case
        when {{ expression }} is null then 'unknown'
        {%- for edge in edges %}
        when {{ expression }} < {{ edge }} then '{{ labels[loop.index0] }}'
        {%- endfor %}
        else '{{ labels[-1] }}'
    end
{% endmacro %}
