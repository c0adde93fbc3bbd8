"""Compatibility name for :mod:`stats.inputs` (the input row checks), kept only for stats/cli.py.

Delete this module once the statistics CLI imports ``SchemaError`` from ``stats.inputs``.
"""

from stats.inputs import SchemaError

__all__ = ["SchemaError"]
