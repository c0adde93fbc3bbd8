{#- Segments: every unit belongs to 'overall' and to one value of each segment type; the
    combinations named in var segment_combinations give two-way segments such as
    platform×rtt_bucket = 'Windows|100-200ms'. -#}

{% macro segment_types() %}
    {%- set out = ['overall', 'platform', 'network_type', 'rtt_bucket', 'loss_bucket', 'bandwidth_bucket'] -%}
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
        {%- for column in ['platform', 'network_type', 'rtt_bucket', 'loss_bucket', 'bandwidth_bucket'] %},
        named_struct('segment_type', '{{ column }}', 'segment_value', {{ alias }}.{{ column }})
        {%- endfor %}
        {%- for combo in var('segment_combinations', []) %}
            {%- for column in combo if column not in ['platform', 'network_type', 'rtt_bucket', 'loss_bucket', 'bandwidth_bucket'] %}
                {%- do exceptions.raise_compiler_error("segment_combinations: unknown segment type " ~ column) -%}
            {%- endfor %},
        named_struct(
            'segment_type', '{{ combo | join("×") }}',
            'segment_value', concat_ws('|', {% for column in combo %}{{ alias }}.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
        )
        {%- endfor %}
    )) segment
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
