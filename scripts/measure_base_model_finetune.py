"""Fine-tune the TargetSum base model with Top-2@4 under the agent's defaults and under the settings of ``reproduce
reasoning`` (the README's numbers on what the defaults do to a pre-trained model).

Each seed builds ``OrderGradPPO("MlpPolicy", "TargetSum-v0", policy_kwargs=base.policy_kwargs, group_size=8,
n_episodes=256, normalize_advantage="group", objective="top2@4")`` as the README's base-model path says, loads the
base model and runs ``learn(--timesteps)`` (40,000 steps: about 10 rollouts of 256 episodes), once with the agent's
defaults and once with ``n_epochs=4, batch_size=64, ent_coef=0.0, novelty_when_blind=False`` (``train_run`` of
``ordergrad_rl/experiments/reasoning.py``); then prints pass@1, pass@8 and pass@32 of ``--samples`` answers on each
of the 100 test problems (sampling seed 1), the base model's first. One thread.

    python scripts/measure_base_model_finetune.py [--seeds 3] [--timesteps 40000] [--samples 32] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch as th  # noqa: E402

from ordergrad_rl.common.options import parser_check_outputs, positive_int  # noqa: E402

#: The settings ``reproduce reasoning`` pins (beside its lr 3e-4 and clip range 0.2, the agent's defaults).
REPRODUCTION: dict[str, Any] = {"n_epochs": 4, "batch_size": 64, "ent_coef": 0.0, "novelty_when_blind": False}
KS = [1, 8, 32]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=positive_int, default=3, help="agent seeds 0 .. N-1 (default: 3)")
    parser.add_argument("--timesteps", type=positive_int, default=40_000, help="learn's budget (default: 40000)")
    parser.add_argument("--samples", type=positive_int, default=32, help="answers per test problem (default: 32)")
    parser.add_argument("--json", metavar="PATH", help="write the numbers here")
    args = parser.parse_args(argv)
    if args.samples < max(KS):
        parser.error(f"--samples must be >= {max(KS)} (pass@{max(KS)} needs that many answers)")
    parser_check_outputs(parser, args)  # --json: before the training runs, not after them

    from ordergrad_rl import OrderGradPPO
    from ordergrad_rl.passk import pass_at_k_curve
    from ordergrad_rl.reasoning import build_base_model, load_base_policy, sample_answers

    th.set_num_threads(1)
    base = build_base_model()

    def curve(policy) -> dict[int, float]:
        success, _ = sample_answers(policy, np.arange(100), args.samples, split="test", seed=1)
        return pass_at_k_curve(success.sum(axis=1), args.samples, KS)

    base_curve = curve(base.policy)
    results: dict[str, list[dict[int, float]]] = {"defaults": [], "reproduction": []}
    print(f"base model: {base_curve}")
    for seed in range(args.seeds):
        runs: tuple[tuple[str, dict[str, Any]], ...] = (("defaults", {}), ("reproduction", REPRODUCTION))
        for name, settings in runs:
            model = OrderGradPPO("MlpPolicy", "TargetSum-v0", policy_kwargs=base.policy_kwargs, group_size=8,
                                 n_episodes=256, normalize_advantage="group", objective="top2@4", seed=seed,
                                 **settings)  # fmt: skip
            load_base_policy(model, base)
            model.learn(args.timesteps)
            measured = curve(model.policy)
            results[name].append(measured)
            print(f"seed {seed}, {name}: {measured}", flush=True)
    if args.json:
        with open(args.json, "w") as file:
            record = {"config": vars(args), "reproduction_settings": REPRODUCTION, "base": base_curve, **results}
            json.dump(record, file, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
