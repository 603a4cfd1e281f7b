"""The reward curve of a training run as a PNG (matplotlib, headless)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["plot_rewards"]


def plot_rewards(rewards: Sequence[float], success: Sequence[float], path: Path, *, title: str) -> Path:
    """Mean reward and solved fraction per round, written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")  # no display on a server
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    rounds = list(range(len(rewards)))
    ax.plot(rounds, list(rewards), marker="o", label="mean reward")
    ax.plot(rounds, list(success), marker="s", linestyle="--", label="solved fraction")
    ax.set_xlabel("round (a policy-gradient step per finished group)")
    ax.set_ylabel("per round")
    ax.set_ylim(bottom=min(0.0, *rewards) if rewards else 0.0)
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    ax.set_title(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
