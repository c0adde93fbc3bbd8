{#- Helpers that turn the metric registry (registry/metrics.yml, which `quicexp dbt` passes as a
    var: macro metric_registry_document) into SQL. Every name and kind is validated here, so a bad
    registry entry fails the build at compile time with one clear message. -#}

{% macro metric_registry() %}
    {%- set doc = metric_registry_document() -%}
    {%- set kinds = ['mean', 'proportion', 'ratio', 'quantile'] -%}
    {%- set sources = event_sources() -%}
    {%- set seen = [] -%}
    {%- set out = [] -%}
    {%- for raw in doc['metrics'] -%}
        {%- set m = {
            'filter': 'true', 'denominator': none, 'quantiles': [0.5, 0.9, 0.95, 0.99],
            'segments': none, 'histogram_of': none, 'guardrail': false,
        } -%}
        {%- do m.update(raw) -%}
        {%- do check_metric_fields(raw) -%}
        {%- if not modules.re.match('^[a-z][a-z0-9_]{0,62}$', m['name'] | string) -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: bad metric name " ~ m['name']) -%}
        {%- endif -%}
        {%- if m['name'] in seen -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: duplicate metric " ~ m['name']) -%}
        {%- endif -%}
        {%- if m['kind'] not in kinds -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ m['name'] ~ " has unknown kind " ~ m['kind']) -%}
        {%- endif -%}
        {%- if m['source'] not in sources -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ m['name'] ~ " has unknown source " ~ m['source']) -%}
        {%- endif -%}
        {%- if m['kind'] == 'quantile' and not m.get('value') -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: quantile metric " ~ m['name'] ~ " needs a value") -%}
        {%- endif -%}
        {%- if m['kind'] != 'quantile' and not m.get('numerator') -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ m['name'] ~ " needs a numerator") -%}
        {%- endif -%}
        {%- if m['kind'] == 'ratio' and not m['denominator'] -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: ratio metric " ~ m['name'] ~ " needs a denominator") -%}
        {%- endif -%}
        {%- for p in m['quantiles'] -%}
            {%- if not (p > 0 and p < 1) -%}
                {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ m['name'] ~ " has a quantile outside (0, 1)") -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if m['segments'] is not none -%}
            {%- for s in m['segments'] -%}
                {%- if s not in segment_types() -%}
                    {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ m['name'] ~ " names unknown segment type " ~ s) -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
        {%- do seen.append(m['name']) -%}
        {%- do out.append(m) -%}
    {%- endfor -%}
    {%- for m in out if m['histogram_of'] and m['histogram_of'] not in seen -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: " ~ m['name'] ~ " histogram_of names no metric") -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}


{#- The event kinds (bronze tables) a metric can come from. -#}
{% macro event_sources() %}
    {{ return(['http_transactions', 'search_queries', 'page_loads', 'video_playbacks',
               'connections', 'multipath_paths', 'header_compression', 'qlog_connections']) }}
{% endmacro %}


{#- Registry entries filtered by kind (list) and source. -#}
{% macro metrics_where(kinds=none, source=none) %}
    {%- set out = [] -%}
    {%- for m in metric_registry() -%}
        {%- if (kinds is none or m['kind'] in kinds) and (source is none or m['source'] == source) -%}
            {%- do out.append(m) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}


{#- Sources (in registry order, deduplicated) of the metrics of the given kinds. -#}
{% macro metric_sources(kinds) %}
    {%- set out = [] -%}
    {%- for m in metrics_where(kinds) if m['source'] not in out -%}
        {%- do out.append(m['source']) -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}


{#- The registry as rows: metric, metric_kind, is_guardrail, unit, direction. -#}
{% macro metric_registry_rows() %}
    select * from values
    {%- for m in metric_registry() %}
        ('{{ m.name }}', '{{ m.kind }}', {{ 'true' if m.guardrail else 'false' }}, '{{ m.unit }}', '{{ m.direction }}'){{ ',' if not loop.last }}
    {%- endfor %}
    as registry (metric, metric_kind, is_guardrail, unit, direction)
{% endmacro %}


{#- Quantile targets as rows: metric, quantile_p, histogram_metric (whose binned values it reads). -#}
{% macro quantile_target_rows() %}
    select * from values
    {%- for m in metrics_where(['quantile']) %}
        {%- set outer_loop = loop %}
        {%- for p in m.quantiles %}
        ('{{ m.name }}', cast({{ p }} as double), '{{ m.histogram_of or m.name }}'){{ ',' if not (loop.last and outer_loop.last) }}
        {%- endfor %}
    {%- endfor %}
    as targets (metric, quantile_p, histogram_metric)
{% endmacro %}


{#- A predicate keeping a metric only in the segment types its registry entry names. -#}
{% macro metric_segment_filter(metric_col, segment_type_col) %}
    {%- set restricted = [] -%}
    {%- for m in metric_registry() if m.segments is not none -%}
        {%- do restricted.append("(" ~ metric_col ~ " = '" ~ m.name ~ "' and " ~ segment_type_col
            ~ " not in ('" ~ (m.segments | join("', '")) ~ "'))") -%}
    {%- endfor -%}
    {%- if restricted -%}
        not ({{ restricted | join(' or ') }})
    {%- else -%}
        true
    {%- endif -%}
{% endmacro %}


{#- A unit's value from its summed numerator and denominator, by metric kind: ratio -> the
    numerator sum (the denominator is x); mean -> numerator / denominator (or the numerator
    sum without a denominator); proportion -> 1 if the numerator sum is positive else 0.
    Units without events (n = 0) get 0, the CUPED convention for a missing pre-period. -#}
{% macro unit_value(kind, numerator, denominator, n) -%}
    case
        when {{ n }} = 0 then 0.0
        when {{ kind }} = 'ratio' then {{ numerator }}
        when {{ kind }} = 'proportion' then case when {{ numerator }} > 0 then 1.0 else 0.0 end
        when {{ denominator }} is null then {{ numerator }}
        else {{ numerator }} / nullif({{ denominator }}, 0)
    end
{%- endmacro %}
