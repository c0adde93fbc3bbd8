{#-
  A `replace_where` incremental strategy for Delta: one atomic
      INSERT INTO <target> REPLACE WHERE <predicate> SELECT ... FROM <new rows>
  so a rerun of a day replaces exactly that day's slice, and a day whose source became
  empty is emptied (merge would leave stale rows; insert_overwrite keeps partitions absent
  from the new data). The model sets `replace_where` to the predicate of its slice.
  These two macros extend dbt-spark's own (same names; the root project's win).
-#}
{% macro dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) %}
  {% if raw_strategy == 'replace_where' %}
    {% if file_format != 'delta' %}
      {% do exceptions.raise_compiler_error("incremental_strategy 'replace_where' needs file_format 'delta'") %}
    {% endif %}
    {% do return(raw_strategy) %}
  {% endif %}
  {% do return(spark__dbt_spark_validate_get_incremental_strategy_builtin(raw_strategy, file_format)) %}
{% endmacro %}

{% macro spark__dbt_spark_validate_get_incremental_strategy_builtin(raw_strategy, file_format) %}
  {% if raw_strategy not in ['append', 'merge', 'insert_overwrite', 'microbatch'] %}
    {% do exceptions.raise_compiler_error("Invalid incremental strategy provided: " ~ raw_strategy) %}
  {% endif %}
  {% if raw_strategy == 'merge' and file_format not in ['delta', 'iceberg', 'hudi'] %}
    {% do exceptions.raise_compiler_error("merge needs file_format delta, iceberg or hudi") %}
  {% endif %}
  {% do return(raw_strategy) %}
{% endmacro %}

{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
  {%- if strategy == 'replace_where' -%}
    {%- set predicate = config.require('replace_where') -%}
    {%- set dest_columns = adapter.get_columns_in_relation(target) -%}
    insert into {{ target }} replace where {{ predicate }}
    select {{ dest_columns | map(attribute='quoted') | join(', ') }} from {{ source }}
  {%- elif strategy == 'append' -%}
    {{ get_insert_into_sql(source, target) }}
  {%- elif strategy in ('insert_overwrite', 'microbatch') -%}
    {{ get_insert_overwrite_sql(source, target, existing) }}
  {%- else -%}
    {{ get_merge_sql(target, source, unique_key, dest_columns=none, incremental_predicates=incremental_predicates) }}
  {%- endif -%}
{% endmacro %}
