"""Write the saved-model fixtures of this release to ``tests/fixtures/saved_<version>/``.

SB3 zips pickle class paths (the algorithm's policy class, buffer classes, schedules), so a file move inside the
package can break every earlier user's saves. Each release's fixtures are written once by the release itself and
kept forever; ``tests/test_saved_fixtures.py`` loads them all with today's code and checks that each predicts
exactly what it predicted when it was saved.

    python scripts/make_saved_fixtures.py          # writes tests/fixtures/saved_<__version__>/
    python scripts/make_saved_fixtures.py --out /tmp/fixtures   # elsewhere (a dry run)

An existing ``saved_<version>`` directory is refused (that release's fixtures are what its users' saves look
like; rewriting them would test nothing): ``--force`` overwrites it, e.g. before the release is published.

Each model is tiny (a few hundred env steps, 8-unit layers) so the fixtures stay a few tens of KB.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from sb3_contrib.common.wrappers import ActionMasker

import ordergrad_rl
from ordergrad_rl import OrderGradMaskablePPO, OrderGradPPO, OrderGradRecurrentPPO, OrderGradREINFORCE
from ordergrad_rl.common.options import parser_check_outputs

ROOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
ENV_ID = "CartPole-v1"
N_OBS = 32
COMMON: dict[str, Any] = dict(n_episodes=8, seed=0, policy_kwargs=dict(net_arch=[8]))


def masked_cartpole() -> gym.Env:
    return ActionMasker(gym.make(ENV_ID), lambda env: np.array([True, True]))


def build() -> dict:
    """name -> (algorithm class name, trained model)."""
    lstm = dict(net_arch=[8], lstm_hidden_size=8)
    return {
        "ppo_cvar": OrderGradPPO("MlpPolicy", ENV_ID, objective="cvar0.25", **COMMON),
        "reinforce_mean": OrderGradREINFORCE("MlpPolicy", ENV_ID, objective="mean", **COMMON),
        "ppo_q_critic": OrderGradPPO("MlpPolicy", ENV_ID, advantage="q_critic", objective="cvar0.25@4", n_steps=64,
                                     batch_size=64, seed=0, policy_kwargs=dict(net_arch=[8])),
        "recurrent_cvar": OrderGradRecurrentPPO("MlpLstmPolicy", ENV_ID, objective="cvar0.25", n_episodes=8,
                                                seed=0, policy_kwargs=lstm),
        "maskable_top2": OrderGradMaskablePPO("MlpPolicy", masked_cartpole(), objective="top2@4", **COMMON),
    }  # fmt: skip


def predictions(model, observations: np.ndarray) -> dict[str, list]:
    """Deterministic actions and the action probabilities of each observation (the recurrent policy from a zero
    state, one step)."""
    obs = th.as_tensor(observations)
    dist: Any  # SB3's CategoricalDistribution (its torch distribution's probs)
    with th.no_grad():
        if isinstance(model, OrderGradRecurrentPPO):
            actions, _ = model.predict(observations, episode_start=np.ones(len(observations), bool), deterministic=True)
            lstm = model.policy.lstm_actor
            zeros = th.zeros(lstm.num_layers, len(obs), lstm.hidden_size)
            dist, _ = model.policy.get_distribution(obs, (zeros, zeros.clone()), th.ones(len(obs)))
        else:
            actions, _ = model.predict(observations, deterministic=True)
            dist = model.policy.get_distribution(obs)
    return {"actions": actions.tolist(), "probs": dist.distribution.probs.numpy().tolist()}


def release_directory(root: Path) -> Path:
    """The fixtures directory of this release under ``root``: ``saved_<version>`` with dots as underscores."""
    return root / f"saved_{ordergrad_rl.__version__.replace('.', '_')}"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments, checked before any model is trained: ``--out`` must be writable, and this release's
    directory in it must not exist unless ``--force``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT,
        metavar="DIR",
        help="directory that receives saved_<version>/ (default: the tests' fixtures, %(default)s)",
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite an existing saved_<version>/ (normally kept forever)"
    )
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)
    target = release_directory(args.out)
    if target.exists() and not args.force:
        parser.error(f"{target} exists: a release's fixtures are written once and kept; pass --force to overwrite them")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    th.set_num_threads(1)
    out = release_directory(args.out)
    out.mkdir(parents=True, exist_ok=True)
    observations = np.random.default_rng(0).normal(scale=0.5, size=(N_OBS, 4)).astype(np.float32)
    expected = {"observations": observations.tolist(), "models": {}}
    for name, model in build().items():
        model.learn(600)
        model.save(out / name)
        expected["models"][name] = {"class": type(model).__name__, **predictions(model, observations)}
    (out / "expected.json").write_text(json.dumps(expected))
    print(f"wrote {len(expected['models'])} models to {out}")


if __name__ == "__main__":
    main()
