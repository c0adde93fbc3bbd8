{#- Segments: every unit belongs to 'overall' and to at most one value of each segment type
    (none where its value is null: the network-condition segments exist for units whose qlog
    sidecar named a condition); the combinations named in var segment_combinations give two-way
    segments such as platform×rtt_bucket = 'Windows|100-200ms'. -#}

{#- The columns of a unit row that name its segments (one segment type each): the client's
    platform and network type, its network buckets (never null: 'unknown'), and the network
    condition its qlog sidecar lines named with that condition's values (null without one;
    the lab writes them, docs/lab.md). -#}
{% macro segment_columns() %}
    {{ return(['platform', 'network_type', 'rtt_bucket', 'loss_bucket', 'bandwidth_bucket',
               'network_condition', 'condition_rtt', 'condition_loss', 'condition_burst',
               'condition_bandwidth']) }}
{% endmacro %}


{% macro segment_types() %}
    {{ return(segment_values('unit') | map(attribute='type') | list) }}
{% endmacro %}


{#- Each segment type with the SQL expression of its value for the unit row `alias`:
    'overall' -> 'all', a segment column -> its value, a combination -> the values joined by '|'
    (null when one of them is). -#}
{% macro segment_values(alias) %}
    {%- set out = [{'type': 'overall', 'value': "'all'"}] -%}
    {%- for column in segment_columns() -%}
        {%- do out.append({'type': column, 'value': alias ~ '.' ~ column}) -%}
    {%- endfor -%}
    {%- for combo in var('segment_combinations', []) -%}
        {%- for column in combo if column not in segment_columns() -%}
            {%- do exceptions.raise_compiler_error("segment_combinations: unknown segment type " ~ column) -%}
        {%- endfor -%}
        {%- set columns = [] -%}
        {%- for column in combo -%}{%- do columns.append(alias ~ '.' ~ column) -%}{%- endfor -%}
        {%- do out.append({'type': combo | join('×'), 'value': "case when " ~ (columns | join(' is not null and '))
            ~ " is not null then concat_ws('|', " ~ (columns | join(', ')) ~ ") end"}) -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}


{#- `lateral view` giving one row per segment the unit row `alias` belongs to
    (columns segment.segment_type, segment.segment_value): none for a type whose value is null. -#}
{% macro explode_segments(alias) %}
    lateral view inline(filter(array(
        {%- for segment in segment_values(alias) %}
        named_struct('segment_type', '{{ segment.type }}', 'segment_value', cast({{ segment.value }} as string)){{ ',' if not loop.last }}
        {%- endfor %}
    ), s -> s.segment_value is not null)) segment
{% endmacro %}


{#- The value of segment type `segment_type` (an expression) for the unit row `alias`: what
    explode_segments gives that row for that type. -#}
{% macro segment_value_of(alias, segment_type) %}
    case {{ segment_type }}
        {%- for segment in segment_values(alias) %}
        when '{{ segment.type }}' then {{ segment.value }}
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
