"""The report job against the lake: read results, arms and audit through Spark, write files + table.

The results are the real stats engine's output on simulated sufficient statistics, stored in a
Delta table the way jobs/experiment_results.py stores them; the ingest audit is left absent on
purpose, so the data-quality line must say "not available".
"""

from __future__ import annotations

from datetime import date

import pytest
from _report_html import FORBIDDEN, soup, table_rows, visible_text
from conftest import DAY, experiment

import jobs.registry
import jobs.report
from jobs.delta_io import ensure_schema
from quicexp.config import ConfigError
from quicexp.errors import InputDataError, PartialFailure
from quicexp.registry import Registry


@pytest.fixture(scope="module")
def lake_with_results(spark, lake, fhol_results):
    settings = lake("report_job")
    registry = Registry(experiments=[experiment("fhol_test", title="QUIC+FHOL vs QUIC (lake)")])
    jobs.registry.run(spark, settings, DAY, registry)
    ensure_schema(spark, settings.gold_schema)
    spark.createDataFrame(fhol_results).write.format("delta").partitionBy("as_of_date").saveAsTable(
        f"{settings.gold_schema}.experiment_results"
    )
    return settings


def test_run_writes_html_markdown_and_the_lake_row(spark, lake_with_results, fhol_results):
    settings = lake_with_results
    paths = jobs.report.run(spark, settings, DAY, "fhol_test")
    assert (
        paths.html == settings.reports_dir / "fhol_test" / "2026-06-17.html"
        and paths.markdown.exists()
    )
    doc = soup(paths.html.read_text())
    assert (
        doc.title.get_text() == "QUIC+FHOL vs QUIC (lake) — 2026-06-17"
    )  # arms and title from the lake
    text = visible_text(doc)
    assert not FORBIDDEN.search(text)
    assert "Data quality: not available" in text and "Daily values: not available" in text
    today = fhol_results[fhol_results["as_of_date"] == DAY]
    main = today[
        today["segment_type"].isin(["overall", "platform"])
        & (today["metric"] != "request_latency_curve")
    ]
    assert len(table_rows(doc, "scorecard")) == len(main)
    jobs.report.run(spark, settings, DAY, "fhol_test")  # re-run: replaced, not duplicated
    rows = spark.table(f"{settings.gold_schema}.experiment_reports").toPandas()
    assert (
        len(rows) == 1
        and rows.iloc[0]["is_trustworthy"]
        and rows.iloc[0]["html"] == paths.html.read_text()
    )


def test_an_earlier_day_shows_only_its_own_past(spark, lake_with_results):
    paths = jobs.report.run(spark, lake_with_results, date(2026, 6, 16), "fhol_test")
    doc = soup(paths.html.read_text())
    assert "day 2 since 2026-06-15" in doc.find(id="header").get_text(" ")
    assert "2026-06-17" not in visible_text(doc)


def test_missing_day_and_unknown_experiment_are_one_line_errors(spark, lake_with_results):
    with pytest.raises(InputDataError, match=r"^no results for experiment fhol_test on 2026-07-01"):
        jobs.report.run(spark, lake_with_results, date(2026, 7, 1), "fhol_test")
    with pytest.raises(ConfigError, match=r"^unknown experiment 'nope'") as err:
        jobs.report.run(spark, lake_with_results, DAY, "nope")
    assert "\n" not in str(err.value)


def test_cli_writes_every_report_it_can_and_names_the_ones_it_cannot(
    spark, lake_with_results, monkeypatch, capsys
):
    """`quicexp report` with several experiments (the DAG's reports task): one Spark session, the
    failing experiment does not stop the others, one line names it, exit 6 (partial)."""
    import quicexp.app.cli

    monkeypatch.setattr(quicexp.app.cli, "_settings", lambda: lake_with_results)
    inputs = []  # what the command tells the session it reads (it chooses the JVM's JIT)
    monkeypatch.setattr(
        quicexp.app.cli, "_spark", lambda settings, app_name, input_bytes=None: inputs.append(input_bytes) or spark
    )
    html = lake_with_results.reports_dir / "fhol_test" / "2026-06-17.html"
    html.unlink(missing_ok=True)

    code = quicexp.app.cli.main(
        ["report", "-e", "nope", "-e", "fhol_test", "-e", "nope", "--date", "2026-06-17"]
    )

    out, err = capsys.readouterr()
    assert code == PartialFailure.exit_code
    assert inputs == [quicexp.app.cli.MART_INPUT_BYTES]  # one session; the marts are a small input
    assert html.exists() and f"report: {html}" in out
    lines = [line for line in err.splitlines() if line.startswith("quicexp:")]
    assert len(lines) == 1
    assert lines[0].startswith("quicexp: error: 1 of 2 reports failed: nope (unknown experiment 'nope'")
    assert "Traceback" not in err
