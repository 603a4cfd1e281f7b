"""Prometheus metrics of env hosting (module-level, registered once per process)."""

from __future__ import annotations

from prometheus_client import Counter

__all__ = ["ENV_RESETS", "ENV_STEPS"]

ENV_STEPS = Counter("trajforge_env_steps_total", "Env steps served, by env and transport.", ["env", "kind"])
ENV_RESETS = Counter("trajforge_env_resets_total", "Episodes started (resets), by env and transport.",
                     ["env", "kind"])
