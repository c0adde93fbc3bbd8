"""``quicexp lab``: A/B experiments between real QUIC stacks on one machine (docs/lab.md).

Entry point: :func:`lab.runner.run` ``(settings, config, day=None, *, progress=...)`` with a
config from :func:`lab.config.load_config`.
"""

from lab.config import LabConfig, load_config
from lab.runner import LabError, LabSummary, run

__all__ = ["LabConfig", "LabError", "LabSummary", "load_config", "run"]
