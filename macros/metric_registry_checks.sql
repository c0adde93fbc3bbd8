{#- The checks of a metric registry entry beyond what macros/metrics.sql needs to build SQL:
    known keys, the required text fields (plain text), direction, guardrail, the display facts
    (label, group, scale) and the filter's grammar. The pydantic model quicexp/metrics.py applies
    the same rules (and reads the filter grammar below); the test tests/test_metric_registry.py
    runs both over the same good and bad entries. -#}

{% macro check_metric_fields(raw) %}
    {%- set name = raw.get('name') -%}
    {%- set known = ['name', 'description', 'kind', 'source', 'numerator', 'denominator', 'value',
                     'filter', 'quantiles', 'histogram_of', 'segments', 'unit', 'direction',
                     'guardrail', 'margin', 'margin_absolute', 'label', 'group', 'scale'] -%}
    {%- for key in raw if key not in known -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has unknown field " ~ key) -%}
    {%- endfor -%}
    {%- for key in ['description', 'unit', 'label'] -%}
        {%- if raw.get(key) is none or raw.get(key) is mapping or (raw.get(key) is iterable and raw.get(key) is not string) or (raw.get(key) | string) == '' -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " needs a " ~ key) -%}
        {%- endif -%}
        {%- if modules.re.search('[{}\\x00-\\x1f\\x7f]', raw.get(key) | string) -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has a " ~ key ~ " that is not plain text (braces or control characters)") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if raw.get('direction') not in ['increase', 'decrease'] -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has direction " ~ raw.get('direction') ~ ", not increase or decrease") -%}
    {%- endif -%}
    {%- if 'guardrail' in raw and not (raw['guardrail'] is sameas true or raw['guardrail'] is sameas false) -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has a guardrail that is not true or false") -%}
    {%- endif -%}
    {%- for key in ['margin', 'margin_absolute'] if key in raw -%}
        {%- if not (raw[key] is number and raw[key] is not sameas true and raw[key] is not sameas false and raw[key] > 0) -%}
            {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has a " ~ key ~ " that is not a positive number") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if 'margin' in raw and 'margin_absolute' in raw -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has both margin and margin_absolute") -%}
    {%- endif -%}
    {%- if 'group' in raw and raw['group'] not in ['latency', 'video', 'transport', 'qlog', 'other'] -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has unknown group " ~ raw['group']) -%}
    {%- endif -%}
    {%- if 'scale' in raw and not (raw['scale'] is number and raw['scale'] is not sameas true and raw['scale'] is not sameas false and raw['scale'] > 0) -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: metric " ~ name ~ " has a scale that is not a positive number") -%}
    {%- endif -%}
    {%- if raw.get('filter') is not none and raw.get('source') in event_sources() -%}
        {%- do check_metric_filter(name, raw['source'], raw['filter']) -%}
    {%- endif -%}
{% endmacro %}


{#- A metric's filter against the grammar of metric_filter_grammar_yaml(): the whole text is a
    sequence of its tokens (whitespace between them), every word is a keyword or a column of
    the source's staging model, parentheses balance. quicexp.metrics.check_filter is the same
    procedure over the same grammar. -#}
{% macro check_metric_filter(name, source, filter) %}
    {%- set grammar = fromyaml(metric_filter_grammar_yaml()) -%}
    {%- set token = grammar['tokens'] | join('|') -%}
    {%- set allowed = grammar['keywords'] + grammar['columns'][source] -%}
    {%- set prefix = "registry/metrics.yml: metric " ~ name ~ " filter " -%}
    {%- if filter is sameas true or filter is sameas false or filter is mapping or (filter is iterable and filter is not string) -%}
        {%- do exceptions.raise_compiler_error(prefix ~ "is not text") -%}
    {%- endif -%}
    {%- set text = filter | string -%}
    {%- if not modules.re.fullmatch('\\s*(?:(?:' ~ token ~ ')\\s*)+', text) -%}
        {%- do exceptions.raise_compiler_error(prefix ~ "is not a predicate of columns, literals, comparisons and and/or/not (" ~ grammar['doc'] ~ ")") -%}
    {%- endif -%}
    {%- set state = namespace(depth=0) -%}
    {%- for t in modules.re.findall(token, text) -%}
        {%- if modules.re.fullmatch(grammar['word'], t) and (t | lower) not in allowed -%}
            {%- do exceptions.raise_compiler_error(prefix ~ "names " ~ t ~ ", neither a column of " ~ source ~ " nor a keyword") -%}
        {%- endif -%}
        {%- set state.depth = state.depth + (1 if t == '(' else (-1 if t == ')' else 0)) -%}
        {%- if state.depth < 0 -%}
            {%- do exceptions.raise_compiler_error(prefix ~ "has unbalanced parentheses") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if state.depth != 0 -%}
        {%- do exceptions.raise_compiler_error(prefix ~ "has unbalanced parentheses") -%}
    {%- endif -%}
{% endmacro %}


{#- The grammar of a metric's `filter`, as YAML: the one definition both validators read (dbt
    above, Python by reading this macro's body, quicexp/metrics.py). A filter compares columns of
    its source's staging model (stg_telemetry__<source>) with literals and combines the
    comparisons with and/or/not; it calls no function, names no other table or column, and
    carries no comment, statement separator, quoted identifier or Jinja. `tokens` are regular
    expressions tried in this order; `word` tells the words among the tokens; the columns are the
    staging models' (tests/test_metric_registry.py compares them with the models' SQL). -#}
{% macro metric_filter_grammar_yaml() -%}
doc: a filter is columns, numbers, 'strings', = <> != < <= > >=, and, or, not, is, null, true, false, in, between and parentheses
tokens:
  - '-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?'
  - '''[^''\\]*'''
  - '<=|>=|<>|!=|=|<|>'
  - '[(),]'
  - '[A-Za-z_][A-Za-z0-9_]*'
word: '[A-Za-z_][A-Za-z0-9_]*'
keywords: [and, or, not, is, 'null', 'true', 'false', in, between]
columns:
  http_transactions: [event_id, client_id, session_id, connection_id, stream_id, platform,
    network_type, experiments, protocol, status_code, latency_ms, ttfb_ms, hol_blocked_ms,
    packets_lost, request_bytes, response_bytes, is_new_connection, event_at, event_date]
  search_queries: [event_id, client_id, session_id, connection_id, platform, network_type,
    experiments, query_index, latency_ms, time_to_abandon_ms, response_bytes, hol_blocked_ms,
    is_abandoned, event_at, event_date]
  page_loads: [event_id, client_id, session_id, connection_id, platform, network_type, experiments,
    prioritization, page_load_time_ms, speed_index_ms, hol_blocked_bytes, resource_count,
    page_bytes, event_at, event_date]
  video_playbacks: [event_id, client_id, session_id, connection_id, platform, network_type,
    experiments, time_to_first_frame_ms, watch_time_ms, rebuffer_count, rebuffer_time_ms,
    mean_bandwidth_kbps, bitrate_kbps, chunks, media_bytes, event_at, event_date]
  connections: [event_id, client_id, session_id, connection_id, platform, network_type,
    experiments, congestion_control, scheduler, initial_window_packets, path_count, srtt_ms,
    min_rtt_ms, packets_sent, packets_lost, packets_retransmitted, close_delay_ms, handshake_ms,
    bytes_sent, bytes_received, cwnd_bytes, delivery_rate_kbps, is_zero_rtt, is_paced, event_at,
    event_date]
  multipath_paths: [event_id, client_id, session_id, connection_id, path_id, platform,
    network_type, experiments, path_network_type, srtt_ms, path_bytes, reinjected_bytes,
    packets_lost, event_at, event_date]
  header_compression: [event_id, client_id, session_id, connection_id, platform, network_type,
    experiments, compression_scheme, header_blocks, header_bytes_raw, header_bytes_compressed,
    header_hol_delay_ms, max_header_hol_ms, event_at, event_date]
  qlog_connections: [trace_id, odcid, client_id, session_id, vantage_point, platform,
    network_type, experiments, network_condition, condition_rtt, condition_loss, condition_burst,
    condition_bandwidth, qlog_version, srtt_ms, srtt_median_ms,
    min_rtt_ms, latest_rtt_ms, rtt_variance_ms, rtt_samples, cwnd_bytes, max_cwnd_bytes,
    packets_sent, packets_received, packets_lost, packets_dropped, bytes_sent, bytes_received,
    handshake_ms, duration_ms, event_at, started_at_source, event_date]
{%- endmacro %}
