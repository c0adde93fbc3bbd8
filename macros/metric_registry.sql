{#- The metric registry as dbt gets it: the var `metric_registry`, which `quicexp dbt`
    (quicexp/app/dbt.py dbt_args) fills with the file Settings.metrics_file names
    (QUICEXP_METRICS_FILE, default registry/metrics.yml), validated by quicexp.metrics and parsed.
    So dbt and Python read the same file, and dbt never renders the registry as a template: the
    var is a mapping, whose values dbt does not render (it renders a var that is a string), so
    Jinja in it stays text, which the checks refuse as not plain. A dbt run without the var
    stops here with one line. -#}
{% macro metric_registry_document() %}
    {%- set doc = var('metric_registry', none) -%}
    {%- if doc is not mapping -%}
        {%- do exceptions.raise_compiler_error("registry/metrics.yml: dbt got no metric registry (var metric_registry); run dbt through `quicexp dbt`, which passes the file Settings.metrics_file names") -%}
    {%- endif -%}
    {{ return(doc) }}
{% endmacro %}
