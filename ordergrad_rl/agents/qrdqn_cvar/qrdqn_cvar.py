"""QRDQNCVaR: sb3-contrib's QR-DQN acting greedily on the CVaR of its predicted return quantiles (a peer baseline).

QR-DQN predicts ``n_quantiles`` quantiles ``theta_j(s, a)`` of the return at the levels ``tau_j = (2j - 1) / (2n)``.
QRDQNCVaR picks ``argmax_a CVaR_alpha(s, a)``, with ``CVaR_alpha(s, a)`` the mean of the lowest ``ceil(alpha n)``
predicted quantiles (the rounding of the ``cvar<a>`` objective), both when acting and for the next action of the
Bellman target, so the learned distributions are those of the policy that acts. When ``alpha n`` is a whole number
(0.2 with 50 quantiles: the lowest 10) this is the exact CVaR of the uniform distribution on the ``n`` quantiles;
otherwise it is that distribution's CVaR at the level ``ceil(alpha n) / n`` above ``alpha``, not interpolated
(0.25 with 50 quantiles averages the lowest 13, CVaR at 0.26; 0.99 with 50 quantiles is the mean).

This is the usual *per-step* approximation of risk-averse control with distributional RL: the CVaR is maximized
anew at every state, over the return from that state on. CVaR of the whole-episode return is time-inconsistent
(the optimal policy depends on the return accumulated so far), so this greedy policy does not in general maximize
the CVaR of the episode return, which is what the episodic OrderGrad agents target.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import QRDQN
from sb3_contrib.common.utils import quantile_huber_loss
from sb3_contrib.qrdqn.policies import CnnPolicy, MultiInputPolicy, QRDQNPolicy, QuantileNetwork
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, RolloutReturn, TrainFreq
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.common.checks import (
    FiniteStepCheckVecEnv,
    check_action_space,
    check_algorithm_action_space,
    check_finite_step,
    check_observation_space,
)
from ordergrad_rl.agents.common.env_util import AgentEnv, check_env_given, wrap_env
from ordergrad_rl.agents.common.policies import check_extractor_reads_dict, check_nature_cnn_input
from ordergrad_rl.common.arguments import check_int


def _check_level(name: str, alpha: Any) -> None:
    """``ValueError`` naming ``name`` unless ``alpha`` is a real number (not a bool) in ``(0, 1]``."""
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0.0 < float(alpha) <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {alpha!r}")


def quantile_cvar(quantiles: th.Tensor, alpha: float, dim: int = 1) -> th.Tensor:
    """Mean of the lowest ``ceil(alpha n)`` of the ``n`` quantiles along ``dim`` (they are sorted first: a quantile
    network's outputs need not be monotone): the CVaR at ``alpha`` of the uniform distribution on the quantiles when
    ``alpha n`` is a whole number, at ``ceil(alpha n) / n`` otherwise (module docstring).

    :param quantiles: e.g. ``[batch, n_quantiles, n_actions]``.
    :param alpha: the level, in ``(0, 1]``.
    :return: the tensor without ``dim``, e.g. ``[batch, n_actions]``.
    :raises ValueError: ``alpha`` outside ``(0, 1]``.
    """
    _check_level("alpha", alpha)
    n = quantiles.shape[dim]
    m = max(1, math.ceil(alpha * n - 1e-12))
    return quantiles.sort(dim=dim).values.narrow(dim, 0, m).mean(dim=dim)


class CVaRQuantileNetwork(QuantileNetwork):
    """QR-DQN's quantile network whose greedy action maximizes the CVaR of the quantiles (``cvar_alpha``)."""

    def __init__(self, *args: Any, cvar_alpha: float = 0.2, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cvar_alpha = cvar_alpha

    def _predict(self, observation: Any, deterministic: bool = True) -> th.Tensor:
        return quantile_cvar(self(observation), self.cvar_alpha).argmax(dim=1).reshape(-1)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "cvar_alpha": self.cvar_alpha}


if TYPE_CHECKING:  # what the mixin is mixed in front of, for type checkers (at run time the MRO puts it there)
    _MixedInto = QRDQNPolicy
else:
    _MixedInto = object


class _CVaRPolicyMixin(_MixedInto):
    """A QR-DQN policy whose quantile networks are :class:`CVaRQuantileNetwork` (policy option ``cvar_alpha``)."""

    #: The policy string that names the class in QRDQNCVaR (``"CnnPolicy"`` ...), for messages.
    policy_alias: ClassVar[str] = "MlpPolicy"

    def __init__(self, *args: Any, cvar_alpha: float = 0.2, **kwargs: Any) -> None:
        _check_level("cvar_alpha", cvar_alpha)
        self.cvar_alpha = cvar_alpha  # read by make_quantile_net, which the parent constructor calls
        super().__init__(*args, **kwargs)

    def make_quantile_net(self) -> CVaRQuantileNetwork:
        # QR-DQN's own policy takes any n_quantiles and fails in torch: 0 at the first forward pass, 2.5 in nn.Linear.
        check_int("n_quantiles", self.net_args["n_quantiles"], 1)
        # Before the features extractor is built: SB3's fail inside on a space they cannot read.
        check_nature_cnn_input(self.features_extractor_class, self.observation_space, self.policy_alias)
        check_extractor_reads_dict(self.features_extractor_class, self.observation_space, self.policy_alias)
        net_args = self._update_features_extractor(self.net_args, features_extractor=None)
        return CVaRQuantileNetwork(cvar_alpha=self.cvar_alpha, **net_args).to(self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "cvar_alpha": self.cvar_alpha}


class CVaRQRDQNPolicy(_CVaRPolicyMixin, QRDQNPolicy):
    """QR-DQN's ``MlpPolicy`` acting on the CVaR of its quantiles."""


class CVaRQRDQNCnnPolicy(_CVaRPolicyMixin, CnnPolicy):
    """QR-DQN's ``CnnPolicy`` acting on the CVaR of its quantiles."""

    policy_alias = "CnnPolicy"


class CVaRQRDQNMultiInputPolicy(_CVaRPolicyMixin, MultiInputPolicy):
    """QR-DQN's ``MultiInputPolicy`` acting on the CVaR of its quantiles."""

    policy_alias = "MultiInputPolicy"


#: sb3-contrib's QR-DQN policies -> the ones acting on the CVaR (the same layout and parameters).
CVAR_POLICIES: dict[type[BasePolicy], type[BasePolicy]] = {
    QRDQNPolicy: CVaRQRDQNPolicy,
    CnnPolicy: CVaRQRDQNCnnPolicy,
    MultiInputPolicy: CVaRQRDQNMultiInputPolicy,
}


SelfQRDQNCVaR = TypeVar("SelfQRDQNCVaR", bound="QRDQNCVaR")


class QRDQNCVaR(QRDQN):
    """sb3-contrib's QR-DQN (discrete actions) acting greedily on ``CVaR_alpha`` of its predicted quantiles.

    Every argument of ``QRDQN`` is accepted; ``alpha`` is the CVaR level (the policy option ``cvar_alpha``). The
    update is QR-DQN's quantile-Huber regression with the target's next action chosen by the same CVaR (module
    docstring: a per-step, time-inconsistent approximation of CVaR control).

    :param policy: ``"MlpPolicy"``, ``"CnnPolicy"``, ``"MultiInputPolicy"`` (QR-DQN's, acting on the CVaR), or a
        subclass of :class:`CVaRQRDQNPolicy` and its Cnn / MultiInput variants (not of sb3-contrib's ``QRDQNPolicy``).
    :param env: env id, ``gym.Env``, ``VecEnv`` or a native batch's ``gym.make_vec``, with a ``Discrete`` action space.
        A ``Discrete`` / ``MultiDiscrete`` action or observation space whose ``start`` is not 0 is refused
        (``ValueError``), as by the OrderGrad agents: QR-DQN would send actions ``0 .. n-1`` and one-hot encode
        observations from 0.
    :param alpha: CVaR level in ``(0, 1]``, keyword-only (``QRDQN``'s third positional argument is
        ``learning_rate``); 1 gives QR-DQN's mean-greedy policy. ``QRDQNCVaR.load`` of a ``QRDQN``
        save gives its quantile network acting on the CVaR at ``alpha`` (0.2, or the one given to ``load``). The other
        way, ``QRDQN.load`` of a ``QRDQNCVaR`` save keeps the saved policy class, as SB3's ``load`` does: that model
        acts on the CVaR at the saved level while ``QRDQN``'s update takes the mean-greedy next action. For a plain
        QR-DQN, build a ``QRDQN`` with the same ``policy_kwargs`` and call its ``set_parameters`` on the save.
    :param kwargs: QR-DQN's arguments, by keyword (``learning_rate``, ``buffer_size``, ``policy_kwargs`` with
        ``n_quantiles``...).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": CVaRQRDQNPolicy,
        "CnnPolicy": CVaRQRDQNCnnPolicy,
        "MultiInputPolicy": CVaRQRDQNMultiInputPolicy,
    }

    def __init__(
        self, policy: str | type[QRDQNPolicy], env: AgentEnv | str, *, alpha: float = 0.2, **kwargs: Any
    ) -> None:
        check_env_given(type(self).__name__, env, kwargs.get("_init_setup_model", True))
        policy_kwargs = dict(kwargs.pop("policy_kwargs", None) or {})
        if "cvar_alpha" in policy_kwargs and policy_kwargs["cvar_alpha"] != alpha:
            raise ValueError(f"alpha={alpha} and policy_kwargs['cvar_alpha']={policy_kwargs['cvar_alpha']} differ")
        policy_kwargs["cvar_alpha"] = alpha
        self.alpha = alpha
        # SB3 types env GymEnv | str; _wrap_env (below) also takes a native batch's gym.make_vec.
        super().__init__(policy, env, policy_kwargs=policy_kwargs, **kwargs)  # type: ignore[arg-type]

    @staticmethod
    def _wrap_env(env: AgentEnv, verbose: int = 0, monitor_wrapper: bool = True) -> VecEnv:
        """SB3's ``_wrap_env`` (of the constructor, ``load(path, env)`` and ``set_env``) taking a native batch's
        ``gym.make_vec``, as the OrderGrad agents do (:func:`~ordergrad_rl.agents.common.env_util.wrap_env`).

        :raises ValueError: an action space other than QR-DQN's ``Discrete``, named
            (:func:`~ordergrad_rl.agents.common.checks.check_algorithm_action_space`), where SB3's constructor
            asserted it.
        """
        venv = wrap_env(env, verbose, monitor_wrapper)
        check_algorithm_action_space(venv.action_space, (spaces.Discrete,), "QRDQNCVaR (QR-DQN)")
        return venv

    @property
    def alpha(self) -> float:
        """The CVaR level, of the actions and of the target's next action: setting it sets the policy's too."""
        return self.__dict__["alpha"]

    @alpha.setter
    def alpha(self, alpha: float) -> None:
        # Kept in __dict__ under its name, which SB3's save and load copy (load sets it, then calls _setup_model).
        _check_level("alpha", alpha)
        self.__dict__["alpha"] = alpha
        if getattr(self, "policy", None) is not None:
            self.policy_kwargs = {**self.policy_kwargs, "cvar_alpha": alpha}
            # The CVaR policy and its CVaRQuantileNetworks (_setup_model refuses other policy classes).
            holders: tuple[Any, ...] = (self.policy, self.policy.quantile_net, self.policy.quantile_net_target)
            for holder in holders:
                holder.cvar_alpha = alpha

    @classmethod
    def load(  # type: ignore[override]
        cls: type[SelfQRDQNCVaR], path: Any, env: GymEnv | None = None, device: th.device | str = "auto", **kwargs: Any
    ) -> SelfQRDQNCVaR:
        """sb3-contrib's ``QRDQN.load``. ``policy_kwargs``, which SB3 requires equal to the saved ones, are compared
        without ``cvar_alpha`` (the level is ``alpha``: the saved one, or the one given to ``load``), so the dict
        the model was built with, or a ``QRDQN`` save's, loads as it does with ``QRDQN.load``.

        :raises ValueError: ``policy_kwargs`` other than the saved ones (SB3's message), or a ``cvar_alpha`` in them
            other than the model's ``alpha``.
        """
        given = kwargs.pop("policy_kwargs", None)
        model = super().load(path, env=env, device=device, **kwargs)
        if given is not None:
            given = dict(given)
            level = given.pop("cvar_alpha", model.alpha)
            saved = {name: value for name, value in model.policy_kwargs.items() if name != "cvar_alpha"}
            if given != saved:
                raise ValueError(
                    f"The specified policy kwargs do not equal the stored policy kwargs. Stored kwargs: {saved}, "
                    f"specified kwargs: {given}"
                )
            if level != model.alpha:
                raise ValueError(f"alpha={model.alpha} and policy_kwargs['cvar_alpha']={level} differ")
        return model

    def _setup_model(self) -> None:
        # The policy acts at the level the target uses: SB3's load(path, alpha=...) sets the attribute after the
        # saved policy_kwargs (with the saved level) are restored, and before this builds the policy. A QR-DQN
        # policy class (a QRDQN save's) becomes its CVaR variant, whose parameters it loads.
        self.policy_class = CVAR_POLICIES.get(self.policy_class, self.policy_class)
        if not issubclass(self.policy_class, _CVaRPolicyMixin):
            raise ValueError(
                f"policy {self.policy_class.__name__} does not act on the CVaR: subclass CVaRQRDQNPolicy, "
                "CVaRQRDQNCnnPolicy or CVaRQRDQNMultiInputPolicy (ordergrad_rl.agents.qrdqn_cvar) rather than QR-DQN's"
            )
        _check_level("alpha", self.alpha)  # load(path, alpha=...) sets it with no check
        self.policy_kwargs = {**self.policy_kwargs, "cvar_alpha": self.alpha}
        check_action_space(self.action_space)  # QR-DQN sends actions 0 .. n-1 and one-hot encodes from 0
        check_observation_space(self.observation_space)
        super()._setup_model()

    def learn(
        self: SelfQRDQNCVaR,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "QRDQNCVaR",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfQRDQNCVaR:
        """sb3-contrib's ``QRDQN.learn``; the TensorBoard runs are named after this class (``QRDQNCVaR_1``), as each
        SB3 algorithm names its own: under QR-DQN's ``"QRDQN"`` they were numbered with the runs of a QR-DQN baseline
        logged beside them, and could not be told from them."""
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        train_freq: TrainFreq,
        replay_buffer: ReplayBuffer,
        action_noise: ActionNoise | None = None,
        learning_starts: int = 0,
        log_interval: int | None = None,
    ) -> RolloutReturn:
        """SB3's off-policy collection, on ``env`` whose every step is checked first
        (:class:`~ordergrad_rl.agents.common.checks.FiniteStepCheckVecEnv`, as the other agents check theirs): QR-DQN
        stored a NaN or infinite reward or observation in its replay buffer, its weights became NaN, and it went on
        acting on NaN quantiles (action 0) without a word.

        :raises ValueError: a step's observation or reward is not finite, or the VecEnv's step is misshapen.
        """
        check_finite_step(self._last_obs, None, "at the start of a rollout (the reset observation)")
        checked: FiniteStepCheckVecEnv | None = getattr(self, "_checked_env", None)
        if checked is None or checked.venv is not env:  # one wrapper per env: collect_rollouts runs every train_freq
            checked = self._checked_env = FiniteStepCheckVecEnv(env, lambda: self.num_timesteps)
        return super().collect_rollouts(
            checked, callback, train_freq, replay_buffer, action_noise, learning_starts, log_interval
        )

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_checked_env"]

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        """QR-DQN's update (sb3-contrib's ``QRDQN.train``) with the CVaR-greedy next action in the target."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        losses = []
        for _ in range(gradient_steps):
            replay_data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma
            with th.no_grad():
                next_quantiles = self.quantile_net_target(replay_data.next_observations)
                # The one change from QR-DQN: the next action maximizes the CVaR, not the mean, of the quantiles.
                next_actions = quantile_cvar(next_quantiles, self.alpha)[:, None, :].argmax(dim=2, keepdim=True)
                next_actions = next_actions.expand(batch_size, self.n_quantiles, 1)
                next_quantiles = next_quantiles.gather(dim=2, index=next_actions).squeeze(dim=2)
                target_quantiles = replay_data.rewards + (1 - replay_data.dones) * discounts * next_quantiles
            current_quantiles = self.quantile_net(replay_data.observations)
            actions = replay_data.actions[..., None].long().expand(batch_size, self.n_quantiles, 1)
            current_quantiles = th.gather(current_quantiles, dim=2, index=actions).squeeze(dim=2)
            loss = quantile_huber_loss(current_quantiles, target_quantiles, sum_over_quantiles=True)
            losses.append(loss.item())
            self.policy.optimizer.zero_grad()
            loss.backward()
            if self.max_grad_norm is not None:
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", np.mean(losses))
