{#- A bronze source that may not exist yet: the qlog table is created by the first qlog ingest
    (`quicexp ingest-qlog`, jobs/qlog), so a lake that never received a trace has none. Gives
    the source relation when the table exists, else an empty relation of the given columns
    ({name: spark type}), so the models build the same on every lake. The `source()` call is
    made either way: dbt's lineage and `dbt source freshness` see the source. -#}
{% macro optional_source(source_name, table_name, columns) %}
    {%- set relation = source(source_name, table_name) -%}
    {%- if execute -%}
        {%- set found = adapter.get_relation(database=relation.database, schema=relation.schema,
                                             identifier=relation.identifier) -%}
    {%- else -%}
        {%- set found = relation -%}
    {%- endif -%}
    {%- if found is not none -%}
        {{ return(relation) }}
    {%- endif -%}
    {%- set casts = [] -%}
    {%- for name, type in columns.items() -%}
        {%- do casts.append('cast(null as ' ~ type ~ ') as ' ~ name) -%}
    {%- endfor -%}
    {{ return('(select ' ~ (casts | join(', ')) ~ ' where false)') }}
{% endmacro %}
