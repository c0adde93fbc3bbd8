{#- Use the folder's schema (silver, gold) as it is, not prefixed with the target's:
    the lake's schema names are part of the contract with Superset and notebooks. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
