"""`make demo`'s console summary: the report's first screen in the terminal, from the same views."""

from __future__ import annotations

import re

import pandas as pd
from conftest import DAY
from rich.console import Console

from quicexp.app.demo import DemoDecision, print_decision
from reports.decision import views


def test_console_leads_with_the_verdict_then_health_then_the_declared_metrics(
    fhol_results, fhol_decisions, fhol_published
):
    console = Console(width=200, record=True, color_system=None)
    overall = fhol_results[fhol_results["segment_type"] == "overall"]
    decision = DemoDecision(DAY, fhol_decisions.verdicts, fhol_decisions.tests, overall, None, fhol_published)

    print_decision(console, decision, {"request_latency": 0.01})

    text = console.export_text()
    lines = text.splitlines()
    verdicts = fhol_decisions.verdicts
    (v,) = views(verdicts[pd.to_datetime(verdicts["as_of_date"]) == pd.Timestamp(DAY)], fhol_decisions.tests)
    # verdict, then health, then the table, the mechanism and the revision, in that order
    order = [text.index(s) for s in (f"day 3 of 14: {v.headline.upper()} — ", "\nhealth: every check passed — ✓ "
             "sample ratio (SRM) (χ² p = ", "\nrole ", "\nmechanism", "\nrevised since published")]  # fmt: skip
    assert order == sorted(order) and text.startswith("fhol_2026_06 as of 2026-06-17, fhol vs control")
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")] for line in lines if "│" in line}
    assert list(rows) == ["mean request latency", "p95 request latency", "rebuffers per playback"]
    for card in v.success + v.guardrails:
        role, _, arm, control, treatment, delta, relative, bounds, _, reading = rows[card.label]
        assert (role, arm, control, treatment, delta, relative, bounds, reading) == (
            card.role, "fhol", card.control, card.treatment, card.delta, card.relative, card.interval_text,
            card.status_text)  # fmt: skip
        # units on every number, both arms with the same decimals
        assert control.endswith(card.unit) and delta.endswith(card.unit)
        decimals = {len(x.split()[0].partition(".")[2]) for x in (control, treatment)}
        assert len(decimals) == 1, (control, treatment)
    assert rows["mean request latency"][8] == "-1.0%" and rows["p95 request latency"][8] == "+2.0%"
    mechanism = next(line for line in lines if line.startswith("mechanism"))
    assert "HoL-blocked time per request, fhol: 0.00 ms → " in mechanism
    revised = [line for line in lines if line.startswith("revised since published")]
    assert len(revised) == 1 and re.search(r"as of 2026-06-17, published → now: verdict|mean request latency", revised[0])
