{#- Fails with the rows where `expression` is not true (an arithmetic invariant). -#}
{% test expression_is_true(model, expression) %}
select *
from {{ model }}
where not coalesce({{ expression }}, false)
{% endtest %}
