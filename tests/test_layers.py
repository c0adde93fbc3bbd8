"""The layers run one way: the import-linter contracts of pyproject.toml hold, and they name
every foundation module (a new module directly under quicexp/ must be placed in a layer)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from quicexp.config import REPO_ROOT


def _layers() -> list[str]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    return layers


def test_the_import_contracts_hold():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_every_foundation_module_is_in_the_bottom_layer():
    foundation = {m.strip() for m in _layers()[-1].split(":")}
    found = {
        f"quicexp.{p.stem}"
        for p in (REPO_ROOT / "quicexp").iterdir()
        if p.name not in ("__init__.py", "app", "__pycache__")
        and (p.suffix == ".py" or (p / "__init__.py").exists())
    }
    assert found == foundation


def test_the_application_is_the_top_layer():
    assert _layers()[0] == "quicexp.app"
