"""Training progress as the schedules read it: held at 0 past an overshot budget, and the warning when ``learn``
in pieces starts the schedules again (``ordergrad_rl.agents.common.progress``)."""

from __future__ import annotations

import warnings

import pytest
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure

from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.progress import schedules_in_force

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RESTART = "start again from progress_remaining"


def _linear(progress_remaining: float) -> float:
    return 0.01 * progress_remaining


def _restart_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if RESTART in str(w.message)]


def test_the_last_update_reads_the_schedules_at_their_end_not_past_it(tmp_path) -> None:
    # 8 lava episodes of about 10 steps per rollout: the last rollout overshoots a 300-step budget, where SB3's
    # progress is negative and 0.01 * p an entropy penalty, and 3e-4 * p a negative learning rate.
    model = OrderGradPPO(
        "MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, ent_coef=_linear,
        learning_rate=lambda p: 3e-4 * p, seed=0,
    )  # fmt: skip
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(300)
    assert model.num_timesteps > 300 and model._current_progress_remaining == 0.0
    rows = [row.split(",") for row in (tmp_path / "progress.csv").read_text().splitlines()]

    def column(name: str) -> list[float]:  # the updates' values (the rows of rollouts without an update are blank)
        return [float(cells[rows[0].index(name)]) for cells in rows[1:] if cells[rows[0].index(name)]]

    coefs, rates = column("train/ent_coef"), column("train/learning_rate")
    assert len(coefs) == len(rates) >= 3
    assert min(coefs) >= 0.0 and min(rates) >= 0.0
    # The last update's values (SB3 dumps a rollout's log before its update, so they are not in the file).
    assert model._ent_coef_in_force() == 0.0
    assert [group["lr"] for group in model.policy.optimizer.param_groups] == [0.0]


@pytest.mark.parametrize("algo", [OrderGradPPO, OrderGradREINFORCE])
def test_learning_in_pieces_warns_that_the_default_bonus_starts_again(algo) -> None:
    # Both decay their default bonus on lava's short categorical episodes (OrderGradPPO's held, then decayed;
    # OrderGradREINFORCE's linear from 0.3).
    model = algo("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, seed=0)
    assert schedules_in_force(model) == ["ent_coef"]
    model.learn(100)
    with pytest.warns(UserWarning, match=RESTART) as caught:
        model.learn(100, reset_num_timesteps=False)
    (message,) = _restart_warnings(caught.list)
    assert message.startswith(f"{algo.__name__}.learn(reset_num_timesteps=False)")
    assert "(ent_coef)" in message and "steps that remain" in message


class _StopAtFirstRollout(BaseCallback):
    def _on_rollout_end(self) -> None:
        self.stopped = True

    def _on_step(self) -> bool:
        return not getattr(self, "stopped", False)


def test_no_warning_where_the_schedules_go_on_or_there_is_none() -> None:
    def pieces(model, first_callback=None) -> list[str]:
        model.learn(400, callback=first_callback)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.learn(400 - model.num_timesteps if first_callback else 100, reset_num_timesteps=False)
            model.learn(100)  # reset_num_timesteps=True: a new schedule from the start, as asked
        return _restart_warnings(caught)

    scheduled = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, seed=0)
    # An interrupted call resumed with the steps that remain goes on where its schedules were.
    assert not pieces(scheduled, _StopAtFirstRollout())
    assert 0 < scheduled.num_timesteps
    constant = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, ent_coef=0.01, seed=0)
    assert schedules_in_force(constant) == [] and not pieces(constant)


def test_schedules_in_force_names_each_schedule_that_moves() -> None:
    model = OrderGradPPO(
        "MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, learning_rate=lambda p: 3e-4 * p,
        risk_schedule="level", novelty_phase=0.1, seed=0,
    )  # fmt: skip
    assert schedules_in_force(model) == ["learning_rate", "ent_coef", "risk_schedule", "novelty_phase"]
    mean = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="mean", n_episodes=8, seed=0)
    assert schedules_in_force(mean) == []
