{#- Fails with the rows where any of `columns` is null: one scan of the model for all of its
    required columns (a not_null test per column costs a Spark query each). -#}
{% test not_null_columns(model, columns) %}
select *
from {{ model }}
where {% for column in columns %}{{ column }} is null{% if not loop.last %} or {% endif %}{% endfor %}
{% endtest %}
