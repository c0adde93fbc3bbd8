"""The batched data test (data-tests/generic/table_checks.sql) reports each kind of violation.

One ``dbt show --inline`` renders the generic test over a few literal rows with a duplicate key,
a null, a value outside the accepted list and a false invariant, and reads the failures back.
"""

from __future__ import annotations

from tests.models.conftest import LAST_DAY

ROWS = (
    "(select * from values ('a', 1, 'x', 1.0), ('a', 1, 'y', 2.0), ('b', null, 'x', 3.0), "
    "('c', 2, 'z', -1.0), ('d', 3, null, 1.0) as t(k1, k2, v, amount))"
)


def _show(settings, sql: str) -> dict[str, int]:
    from dbt.cli.main import dbtRunner

    from quicexp.app.dbt import dbt_args

    result = dbtRunner().invoke(dbt_args("show", settings, LAST_DAY, ["--inline", sql, "--limit", "50"]))
    assert result.success, result.exception
    table = result.result.results[0].agate_table
    return {row["failed_check"]: int(row["failing_rows"]) for row in table.rows}


def test_each_violation_is_reported_with_its_count(spark, lake):
    sql = (
        "{{ test_table_checks(model=\"" + ROWS + "\", not_null=['k1', 'k2'], unique=['k1'], "
        "accepted_values={'v': ['x', 'y']}, expressions=['amount >= 0', 'amount < 3']) }}"
    )
    assert _show(lake("table_checks_bad"), sql) == {
        "unique(k1)": 1,  # key 'a' twice
        "not_null(k1, k2)": 1,  # b has k2 null
        "accepted_values(v)": 1,  # z (the null v passes, as in dbt's accepted_values)
        "expression 1": 1,  # amount -1
        "expression 2": 1,  # amount 3
    }


def test_clean_rows_report_nothing(spark, lake):
    sql = (
        "{{ test_table_checks(model=\"" + ROWS + "\", not_null=['k1'], "
        "accepted_values={'v': ['x', 'y', 'z']}, expressions=['amount < 10']) }}"
    )
    assert _show(lake("table_checks_ok"), sql) == {}
