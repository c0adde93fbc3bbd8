"""``quicexp plan-experiment``: the units and days an experiment needs before it starts."""

from __future__ import annotations

from typing import Annotated

import typer


def plan_experiment_command(
    experiment: Annotated[
        str, typer.Option("--experiment", "-e", help="Experiment id from the registry.")
    ],
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference",
            help="Experiment whose latest results give the metrics' variance and the traffic "
            "(default: the experiment itself, else the latest one in the lake with its metrics).",
        ),
    ] = None,
    alpha: Annotated[float, typer.Option(min=1e-6, max=0.5, help="False-ship rate.")] = 0.05,
    power: Annotated[
        float, typer.Option(min=0.5, max=0.999, help="Probability to ship at the minimum effects.")
    ] = 0.8,
) -> None:
    """Units per arm and days the experiment's declared metrics need under the decision rule:
    each success metric at its minimum effect (superiority at alpha / S), each guardrail
    unchanged but a margin from its threshold (non-inferiority at alpha), each test at power
    1 - beta / (G + 1); variance and traffic from the lake's latest results."""
    import jobs.experiment_plan
    from quicexp.app.cli import MART_INPUT_BYTES, _settings, _spark
    from quicexp.registry import load_registry

    settings = _settings()
    registry = load_registry(settings.registry_file)
    registry.get(experiment)  # an unknown id is a usage error, found before the JVM starts
    spark = _spark(settings, "quicexp-plan-experiment", MART_INPUT_BYTES)
    p = jobs.experiment_plan.run(spark, settings, experiment, registry, reference, alpha, power)
    looks = f"{p.looks} daily always-valid looks" if p.looks else "one fixed-horizon look"
    typer.echo(f"{experiment}: sized from {p.reference_id} as of {p.reference_date}, {looks}, "
               f"alpha {alpha:g}, power {power:.0%}")  # fmt: skip
    typer.echo(f"  {'role':9s} {'metric':32s} {'effect':>9s} {'level':>7s} {'power':>6s} "
               f"{'units/arm':>10s}")  # fmt: skip
    for r in p.tests.itertuples(index=False):
        effect = f"{r.effect:.1%}" if r.effect_scale == "relative" else f"{r.effect:g} abs"
        units = f"{r.units_per_arm:,.0f}" if r.units_per_arm == r.units_per_arm else "unknown"
        typer.echo(f"  {r.role:9s} {r.metric:32s} {effect:>9s} {r.level:7.4f} "
                   f"{r.test_power:6.1%} {units:>10s}")  # fmt: skip
    if p.units_per_arm != p.units_per_arm:
        typer.echo("needs: unknown (a metric's variance is missing)")
        return
    typer.echo(f"needs {p.units_per_arm:,.0f} units per arm: {p.days:.1f} days at "
               f"{p.units_per_arm_per_day:,.0f} new units per arm a day (as {p.reference_id})")  # fmt: skip
