"""Benchmarks: `python -m bench --size N` (the thin path) and `python -m bench.<module>`."""
