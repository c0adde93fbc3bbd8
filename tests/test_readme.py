"""Examples that cannot rot: every command in README.md's shell blocks runs as written, at small
sizes (``--days``/``--clients`` and ``DAYS``/``CLIENTS`` made small), in a lake namespace of its
own. ``make test`` is the one exception: it is this suite.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from quicexp.config import REPO_ROOT
from tests.helpers import QUICEXP

pytestmark = pytest.mark.e2e

#: the suite itself (CI runs it); anything else in a shell block must run
NOT_RUN = {"make test"}
#: what a Spark JVM prints when its output reaches the console: a log4j line, the JVM's warning for
#: the vector module, spark-submit's note on log levels (they belong in <home>/logs)
JVM_OUTPUT = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d [A-Z]+ |Using incubator modules|setLogLevel")
SMALL = {"--days": "1", "--clients": "300", "DAYS": "1", "CLIENTS": "300"}


def readme_commands() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = line.split("  #")[0].split(" # ")[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def small(command: str) -> list[str]:
    """The command's words with sizes made small (``--days 7`` → ``--days 1``; ``make demo`` →
    ``make demo DAYS=1 CLIENTS=300``)."""
    words = shlex.split(command)
    out = []
    for i, word in enumerate(words):
        out.append(SMALL[words[i - 1]] if i and words[i - 1] in SMALL else word)
    if words[:2] == ["make", "demo"]:
        out += [f"{k}={v}" for k, v in SMALL.items() if k.isupper()]
    return out


def test_the_readme_shows_the_commands_this_test_runs():
    commands = readme_commands()
    assert "make demo" in commands and "make test" in commands
    assert any(c.startswith("quicexp simulate") for c in commands)


def _env(lake, name: str, cwd: Path) -> dict[str, str]:
    settings = lake(name)
    env = dict(os.environ)
    env.update({
        "QUICEXP_HOME": str(settings.home), "QUICEXP_LAKE_ROOT": str(settings.lake_root),
        "QUICEXP_LANDING_ROOT": str(cwd / "var" / "landing"),
        "QUICEXP_METASTORE_DIR": str(settings.metastore_dir),
        "QUICEXP_BRONZE_SCHEMA": settings.bronze_schema, "QUICEXP_SILVER_SCHEMA": settings.silver_schema,
        "QUICEXP_GOLD_SCHEMA": settings.gold_schema,
        "PATH": f"{Path(QUICEXP).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    })  # fmt: skip
    return env


def test_every_readme_command_runs_as_written(spark, lake, tmp_path):
    """Run in order; an input a command reads (the statistics file) is made the way an analyst
    would, from the lake the commands before it wrote."""
    env = _env(lake, "readme", tmp_path)
    gold = env["QUICEXP_GOLD_SCHEMA"]
    for command in readme_commands():
        if command in NOT_RUN:
            continue
        argv = small(command)
        if argv[0] == "make":
            argv = ["make", "-C", str(REPO_ROOT), *argv[1:]]
        if argv[:2] == ["quicexp", "stats"]:
            stats = spark.table(f"{gold}.experiment_sufficient_stats").toPandas()
            stats.to_parquet(tmp_path / argv[2])
        done = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, f"{command!r} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        jvm_lines = [line for line in (done.stdout + done.stderr).splitlines() if JVM_OUTPUT.search(line)]
        assert not jvm_lines, f"{command!r} printed the JVM's output on the console: {jvm_lines[:3]}"
        if argv[:3] == ["make", "-C", str(REPO_ROOT)] and "demo" in argv:
            lines = (done.stdout + done.stderr).splitlines()
            assert len(lines) < 60, f"make demo printed {len(lines)} lines:\n" + "\n".join(lines)
    results = pd.read_parquet(tmp_path / "results.parquet")
    assert len(results) > 0
