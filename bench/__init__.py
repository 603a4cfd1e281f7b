"""Benchmarks: scripts that print measured figures next to a baseline."""

__all__: list[str] = []
