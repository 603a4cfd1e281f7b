"""Training-loop benchmark: the closed loop of ``trajforge train`` on the local model, measured per round.

Prints, per round, the mean reward and solved fraction, rollout time and sampled tokens/s, the
gradient-step time and the weight-update pause (``POST /inference/update_weights_from_disk``), then
rounds per hour and, side by side, round 0 (the untrained policy, the baseline) against the last rounds.
Writes history.json and the reward-per-round PNG.

Run: PYTHONPATH=. python bench/train.py [SPEC] [--rounds N] [--plot docs/train_rewards.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench import headline
from services.embedded import embedded_server
from services.inference.train.loop import TrainRun, run_training
from services.inference.train.plot import plot_rewards
from services.inference.train.policy import TrainablePolicy
from services.inference.train.spec import load_train_spec
from shared.client import Client
from shared.settings import get_settings

ROOT = Path(__file__).resolve().parents[1]


def _report(run: TrainRun, wall_s: float, *, cycle: int) -> None:
    print(f"{'round':>5} {'reward':>7} {'solved':>7} {'signal':>7} {'rollout s':>9} {'tok/s':>6} {'steps':>5}"
          f" {'step s':>7} {'overlap s':>9} {'update s':>8} {'version':>7}")
    for r in run.rounds:
        print(f"{r.round:>5} {r.reward_mean:>7.3f} {r.success_rate:>7.0%} {r.groups_with_signal:>3}/{r.groups:<3}"
              f" {r.rollout_s:>9.1f} {r.sampled_tokens / max(r.rollout_s, 1e-9):>6.1f} {r.steps:>5} {r.train_s:>7.1f}"
              f" {r.train_overlap_s:>9.1f} {r.update_s:>8.2f} {r.weight_version_after!s:>7}")
    rounds = run.rounds
    print(f"rounds per hour: {3600 * len(rounds) / wall_s:.1f} (wall {wall_s:.0f} s for {len(rounds)} rounds)")
    rollout, step = sum(r.rollout_s for r in rounds), sum(r.train_s for r in rounds)
    tokens = sum(r.sampled_tokens for r in rounds)
    overlap = sum(r.train_overlap_s for r in rounds)
    print(f"rollout: {tokens / rollout:.1f} sampled tokens/s; steps: {step / len(rounds):.1f} s per round, "
          f"{overlap / max(step, 1e-9):.0%} of it while the round sampled; weight update pause: "
          f"{sum(r.update_s for r in rounds) / len(rounds):.2f} s per round")
    tail = rounds[-max(1, len(rounds) // 3):]
    base = rounds[0]
    print(f"baseline (round 0, untrained): reward {base.reward_mean:.3f}, solved {base.success_rate:.0%}")
    print(f"ours (last {len(tail)} rounds):      reward {sum(r.reward_mean for r in tail) / len(tail):.3f}, "
          f"solved {sum(r.success_rate for r in tail) / len(tail):.0%}")
    headline("train", f"reward, last {len(tail)} rounds (mean)", sum(r.reward_mean for r in tail) / len(tail),
             base.reward_mean, baseline_name="round 0, untrained", unit="reward")
    # Rounds take different slices of the tasks, so the fair comparison is a round against the one a
    # cycle earlier: the same tasks, sampled under older weights.
    for r in rounds[cycle:]:
        before = rounds[r.round - cycle]
        print(f"same tasks, round {before.round} → {r.round}: reward {before.reward_mean:.3f} → {r.reward_mean:.3f}, "
              f"solved {before.success_rate:.0%} → {r.success_rate:.0%} ({r.elapsed_s / 60:.1f} min into the run)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default=str(ROOT / "examples" / "train_tool_call.yaml"))
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--plot", default=None, help="PNG path (default: OUT/rewards.png)")
    args = parser.parse_args()
    spec, out = load_train_spec(Path(args.spec))
    if args.rounds:
        spec = spec.model_copy(update={"rounds": args.rounds})
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="trajforge-bench-train-"))
    settings = get_settings()
    settings = settings.model_copy(update={"tools_sandbox": "optional"})
    policy = TrainablePolicy.load(spec.model_path, cache_dir=settings.model_cache_path,
                                  learning_rate=spec.learning_rate, trainable_layers=spec.trainable_layers)
    started = time.perf_counter()
    with embedded_server(settings, log_level="ERROR") as server, \
            Client(server.url, api_key=server.api_key, timeout=900) as client:
        run = run_training(client, spec, policy, out_dir=out, log=lambda line: print(line, flush=True))
    cycle = max(1, -(-len(spec.rollout["tasks"]) // spec.tasks_per_round))
    _report(run, time.perf_counter() - started, cycle=cycle)
    plot = Path(args.plot) if args.plot else out / "rewards.png"
    title = f"SmolLM2-135M, get_weather task: reward per round ({len(run.rounds)} rounds)"
    written = plot_rewards([r.reward_mean for r in run.rounds], [r.success_rate for r in run.rounds], plot,
                           title=title)
    print(f"wrote {written}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
