"""The report job against the lake: read results, verdicts, arms and audit through Spark, write
files + tables, and mark a revised as-of date.

The results are the real stats engine's output on simulated sufficient statistics, stored in a
Delta table the way jobs/experiment_results.py stores them, and the verdicts are written by that
job's own decision step; the ingest audit is left absent on purpose, so the data-quality line must
say "not available".
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest
import yaml
from _report_html import FORBIDDEN, soup, table_rows, visible_text
from conftest import DAY, experiment

import jobs.registry
import jobs.report
from jobs.delta_io import ensure_schema, replace_where
from jobs.experiment_results import write_decisions
from quicexp.config import ConfigError
from quicexp.errors import InputDataError, PartialFailure
from quicexp.registry import Registry

#: fhol_test has results; no_results is registered and never analysed (its report fails)
REGISTRY = Registry(experiments=[experiment("fhol_test", title="QUIC+FHOL vs QUIC (lake)", declared=True),
                                 experiment("no_results")])  # fmt: skip


@pytest.fixture(scope="module")
def lake_with_results(spark, lake, fhol_results):
    settings = lake("report_job")
    jobs.registry.run(spark, settings, DAY, REGISTRY)
    ensure_schema(spark, settings.gold_schema)
    spark.createDataFrame(fhol_results).write.format("delta").partitionBy("as_of_date").saveAsTable(
        f"{settings.gold_schema}.experiment_results"
    )
    registry_file = settings.home / "experiments.yml"  # the report reads the declaration there
    registry_file.parent.mkdir(parents=True, exist_ok=True)
    registry_file.write_text(yaml.safe_dump(REGISTRY.model_dump(mode="json"), sort_keys=False))
    settings = settings.model_copy(update={"registry_file": registry_file})
    write_decisions(spark, settings, DAY, REGISTRY)  # the results step's own writer
    assert spark.table(f"{settings.gold_schema}.experiment_decisions").count() == 3
    return settings


def _published(spark, gold: str) -> pd.DataFrame:
    """gold.experiment_report_published in a fixed row order."""
    frame = spark.table(f"{gold}.experiment_report_published").toPandas()
    return frame.sort_values(["as_of_date", "treatment_arm", "item"]).reset_index(drop=True)


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
    verdict = doc.find(id="verdict-fhol")
    assert verdict is not None and len(doc.find_all(class_="card")) == 3
    assert "minimum effect -1.0%" in doc.find(class_="card").get_text(" ")  # from the registry file
    published = _published(spark, settings.gold_schema)
    assert set(published["as_of_date"].astype(str)) == {DAY.isoformat()}
    assert published.set_index("item").loc["verdict", "verdict"] == verdict["data-verdict"]
    assert len(published) == 1 + len(today[(today["segment_type"] == "overall")
                                             & (today["metric"] != "request_latency_curve")])  # fmt: skip
    jobs.report.run(spark, settings, DAY, "fhol_test")  # re-run: replaced, not duplicated
    rows = spark.table(f"{settings.gold_schema}.experiment_reports").toPandas()
    assert (
        len(rows) == 1
        and rows.iloc[0]["is_trustworthy"]
        and rows.iloc[0]["html"] == paths.html.read_text()
    )
    assert _published(spark, settings.gold_schema).equals(published)  # the first publication stays the reference


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
    failing experiment does not stop the others, one line names it, exit 6 (partial); an id the
    registry does not know is a usage error before any Spark (exit 2)."""
    import quicexp.app.cli

    monkeypatch.setattr(quicexp.app.cli, "_settings", lambda: lake_with_results)
    inputs = []  # what the command tells the session it reads (it chooses the JVM's JIT)
    monkeypatch.setattr(
        quicexp.app.cli, "_spark", lambda settings, app_name, input_bytes=None: inputs.append(input_bytes) or spark
    )
    html = lake_with_results.reports_dir / "fhol_test" / "2026-06-17.html"
    html.unlink(missing_ok=True)

    assert quicexp.app.cli.main(["report", "-e", "nope", "-e", "fhol_test", "--date", "2026-06-17"]) == 2
    assert inputs == [] and "unknown experiment 'nope'" in capsys.readouterr().err

    code = quicexp.app.cli.main(
        ["report", "-e", "no_results", "-e", "fhol_test", "-e", "no_results", "--date", "2026-06-17"]
    )

    out, err = capsys.readouterr()
    assert code == PartialFailure.exit_code
    assert inputs == [quicexp.app.cli.MART_INPUT_BYTES]  # one session; the marts are a small input
    assert html.exists() and f"report: {html}" in out
    lines = [line for line in err.splitlines() if line.startswith("quicexp:")]
    assert len(lines) == 1
    assert lines[0].startswith("quicexp: error: 1 of 2 reports failed: no_results (no results for experiment no_results")
    assert "Traceback" not in err


def test_a_revised_day_shows_both_values_and_every_health_check(spark, lake_with_results, fhol_results):
    """Late data changes DAY's numbers after its report went out (here: DAY's results become those
    of a smaller sample, the day before's): the re-rendered report marks DAY as revised, with the
    published and the current value; the health table, once it exists, shows every row."""
    from pyspark.sql import functions as F

    settings, gold = lake_with_results, lake_with_results.gold_schema
    published = _published(spark, gold)
    smaller = fhol_results[fhol_results["as_of_date"] == date(2026, 6, 16)].assign(as_of_date=DAY)
    replace_where(spark.createDataFrame(smaller), f"{gold}.experiment_results", F.col("as_of_date") == F.lit(DAY))
    write_decisions(spark, settings, DAY, REGISTRY)
    health = pd.DataFrame({"experiment_id": "fhol_test", "as_of_date": DAY, "check": ["srm", "late_data_share"],
                           "statistic": [0.4, 0.08], "p_value": [0.52, None], "threshold": [0.001, 0.05],
                           "passed": [True, False], "is_gate": [True, False]})  # fmt: skip
    spark.createDataFrame(health).write.format("delta").saveAsTable(f"{gold}.experiment_health")

    doc = soup(jobs.report.run(spark, settings, DAY, "fhol_test").html.read_text())

    mark = " ".join(doc.find(id="revision").get_text(" ").split())
    old = published[(published["item"] == "request_latency") & (published["as_of_date"] == DAY)].iloc[0]
    new = smaller[(smaller["metric"] == "request_latency") & (smaller["segment_type"] == "overall")].iloc[0]
    assert f"({old['delta_rel'] * 100:+.1f}%) → " in mark and f"({new['delta_rel'] * 100:+.1f}%)" in mark
    banner = doc.find(id="health")
    assert banner["data-state"] == "warning"
    assert [c["data-check"] for c in banner.find_all(class_="check")] == ["late_data_share", "srm"]
    assert _published(spark, gold).equals(published)
