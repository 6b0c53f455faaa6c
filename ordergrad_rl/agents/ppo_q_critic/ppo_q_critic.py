"""OrderGradQCriticPPO: PPO on per-state OrderGrad advantages with a per-action Q critic (paper appendix "RL
Experiments", Algorithm 1); ``OrderGradPPO(..., advantage="q_critic")`` builds it.

Per step rather than per episode: the rollout is SB3's (``n_steps`` per env in a ``RolloutBuffer``), and every
state's advantage is an order-statistic advantage *over the action distribution*, in the known-(r, p) regime
(paper App. D), with a learned per-action critic ``Q(s, .)``:

1. SB3 collects the rollout and computes lambda-returns ``R^lambda_t`` by GAE, bootstrapping with
   ``V(s) = sum_a pi(a|s) Q(s, a)`` (the Q policy's ``predict_values``). A truncated episode (``TimeLimit``)
   bootstraps from the value of its final observation, a terminated one from 0, as SB3 does for timeouts.
2. ``q_t = Q(s_t, .)`` and ``pi_t = pi(.|s_t)`` are the collector's own network outputs, recorded while acting
   (:meth:`~ordergrad_rl.agents.common.policies.OrderGradPolicyMixin.recording_q_values`).
3. ``q~_t`` = ``q_t`` with the sampled action's entry replaced by ``R^lambda_t``; the advantage of step ``t`` is
   ``A_t = k * abar_{a_t}(q~_t, pi_t)`` from **one** :func:`~ordergrad_rl.core.known_lstat_advantage` call over
   all states of the rollout (``k * abar`` is the policy-gradient weight of eq. app-known-lr-gradient).
4. SB3's ``PPO.train`` runs unchanged: the clipped surrogate on ``A_t`` (centred and scaled per minibatch when
   ``normalize_advantage``, as SB3 and pgx's PPO do), and the "value" loss on ``Q(s_t, a_t)`` (what the Q policy's
   ``evaluate_actions`` returns) against ``R^lambda_t``: the Q loss, weighted by ``vf_coef``.

With ``objective="mean"`` (k = 1) the advantage is ``q~_t(a_t) - sum_b pi_t(b) q~_t(b)``: the PPO-Q baseline with
the same network and critic, so a comparison with Top-M@K isolates the objective.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.common.arguments import MIN_BATCH_SIZE, check_advantage, check_arguments, check_ppo_arguments
from ordergrad_rl.agents.common.base_class import OrderGradAlgorithmMixin, sb3_load_options
from ordergrad_rl.agents.common.checks import FiniteStepCheckVecEnv, check_finite_step
from ordergrad_rl.agents.common.env_util import AgentEnv, build_env, check_env_given
from ordergrad_rl.agents.common.policies import OrderGradPolicyMixin, action_probs
from ordergrad_rl.agents.common.risk_logging import TRAIN_PREFIX, record_risk_profile
from ordergrad_rl.agents.common.utils import lent_attributes, pop_record
from ordergrad_rl.agents.ppo_q_critic.policies import Q_CRITIC_POLICIES, Q_CRITIC_POLICY_ALIASES
from ordergrad_rl.common.arguments import check_int, check_number, check_seed
from ordergrad_rl.core import ChannelObjective, Objective, known_lstat_advantage
from ordergrad_rl.core.channels import parse_objective
from ordergrad_rl.core.objectives import ObjectiveLike

#: The advantage mode of this algorithm (its ``advantage`` attribute, saved).
Q_CRITIC = "q_critic"
#: Default rollout length per env (SB3's PPO default).
DEFAULT_N_STEPS = 2048
#: States per forward pass when the whole rollout is re-evaluated (bounds the activations' memory).
_EVAL_CHUNK = 16_384


def q_critic_advantages(
    q: th.Tensor,
    probs: th.Tensor,
    actions: th.Tensor,
    returns: th.Tensor,
    objective: Objective,
) -> th.Tensor:
    """Per-step OrderGrad advantages of the sampled actions, ``A_t = k * abar_{a_t}(q~_t, pi_t)``.

    ``q~_t`` is ``q_t`` with entry ``a_t`` replaced by ``R^lambda_t``; ``abar`` is the exact known-(r, p) advantage
    (paper eq. app-adv-known) of the bound ``objective``, computed for all ``T`` states in one batched call (in
    float64: the binomial tables of a large ``k`` lose digits in float32).

    :param q: critic values ``Q(s_t, .)``, ``[T, |A|]``.
    :param probs: policy probabilities ``pi(.|s_t)``, ``[T, |A|]``.
    :param actions: sampled actions ``[T]`` (integers).
    :param returns: lambda-returns ``R^lambda_t``, ``[T]``.
    :param objective: a bound :class:`~ordergrad_rl.core.Objective` (``k`` = number of action draws).
    :return: ``[T]`` advantages, dtype of ``q``.
    """
    index = actions.long().reshape(-1, 1)
    q_tilde = q.double().scatter(-1, index, returns.double().reshape(-1, 1))
    abar = known_lstat_advantage(q_tilde, probs.double(), objective)
    return (objective.k * abar.gather(-1, index).squeeze(-1)).to(q.dtype)


_EPISODIC_ONLY = (
    "group_size and normalize_advantage='group', 'channel' or 'running' are for advantage='episodic' (episode "
    "weights); Q-critic mode ranks action draws per state"
)


def check_q_critic_ent_coef(ent_coef: Any) -> None:
    """``ValueError`` unless ``ent_coef`` is ``None`` (0.0) or a finite number: SB3's PPO update multiplies by it, so
    Q-critic mode takes no schedule (the episodic modes do)."""
    if ent_coef is not None:
        check_number("ent_coef", ent_coef)


def check_q_critic_group_size(group_size: Any) -> None:
    """``ValueError`` unless ``group_size`` is ``None``: groups of episodes are episodic mode's."""
    if group_size is not None:
        raise ValueError(_EPISODIC_ONLY)


def check_q_critic_n_episodes(n_episodes: Any) -> None:
    """``ValueError`` unless ``n_episodes`` is ``None``: this mode collects ``n_steps`` steps per env."""
    if n_episodes is not None:
        raise ValueError(
            "advantage='q_critic' collects n_steps steps per env (SB3's rollout); n_episodes is for "
            "advantage='episodic'"
        )


def check_q_critic_reward_to_go(reward_to_go: Any) -> None:
    """``ValueError`` for a true ``reward_to_go``: episodic mode's; this mode takes SB3's lambda-returns."""
    if reward_to_go:
        raise ValueError("reward_to_go is for advantage='episodic'; Q-critic mode uses SB3's lambda-returns")


def check_q_critic_normalize_advantage(normalize_advantage: Any) -> None:
    """``ValueError`` unless ``normalize_advantage`` is ``True``, ``False`` or ``None``: SB3's per-minibatch
    normalization, on or off (``bool()`` would take the string ``"False"`` for true); the episodic modes' ``"group"``,
    ``"channel"`` and ``"running"`` normalize episode weights, which this mode has not."""
    if normalize_advantage in ("group", "channel", "running"):
        raise ValueError(_EPISODIC_ONLY)
    if not isinstance(normalize_advantage, bool | None):
        raise ValueError(f"normalize_advantage must be True or False in Q-critic mode, got {normalize_advantage!r}")


SelfQCritic = TypeVar("SelfQCritic", bound="OrderGradQCriticPPO")


def _flat_steps(array: np.ndarray) -> np.ndarray:
    """``[n_steps, n_envs, *shape]`` -> ``[n_steps * n_envs, *shape]`` (a view, step-major like the buffer)."""
    return array.reshape(-1, *array.shape[2:])


class _RolloutEndHeld:
    """``callback`` as SB3's collection calls it, but for ``on_rollout_end``, which the collector calls itself once
    the rollout's advantages and logs are in place (:meth:`OrderGradQCriticPPO.collect_rollouts`)."""

    def __init__(self, callback: BaseCallback) -> None:
        self.callback = callback

    def __getattr__(self, name: str) -> Any:
        return getattr(self.callback, name)

    def on_rollout_end(self) -> None:
        pass


class OrderGradQCriticPPO(OrderGradAlgorithmMixin, PPO):
    """PPO whose advantages are per-state OrderGrad advantages over the action distribution, valued by a learned
    per-action Q critic (paper appendix "RL Experiments", Algorithm 1; ``Discrete`` actions).

    SB3's step-based rollout of ``n_steps`` per env; per state, the objective is an L-statistic of ``k`` action draws
    from ``pi(.|s)`` valued by the critic, and the advantage of the sampled action is the exact known-(r, p)
    advantage with the critic's ``Q(s, .)`` whose sampled entry is replaced by the lambda-return (module docstring).
    The objective must fix ``k`` (``"top9@10"``); ``"mean"`` (the default) gives the PPO-Q baseline. The Q head is
    trained by PPO's value loss (``vf_coef``) toward the lambda-returns, and SB3's per-minibatch advantage
    normalization applies. Logged: ``train/q_loss`` (in place of ``train/value_loss``), ``rollout/entropy`` (mean
    policy entropy over the rollout's states) and ``risk/*`` of the returns of the episodes finished during the
    rollout. The paper's MinAtar setup::

        OrderGradPPO("MlpPolicy", env, advantage="q_critic", objective="top9@10", n_steps=128, n_epochs=3,
                     gamma=0.99, gae_lambda=0.8, learning_rate=3e-4, ent_coef=0.0,
                     policy_kwargs=dict(features_extractor_class=GridCNN, net_arch=dict(pi=[64, 64], vf=[64, 64])))

    ``OrderGradPPO(..., advantage="q_critic")`` and ``OrderGradPPO.load`` of such a model give this class (it was a
    mode of OrderGradPPO in release 0.1.0, and saves in the same format: ``ordergrad_algorithm="OrderGradPPO"``,
    ``advantage="q_critic"``). After the advantages are computed, the buffer's ``values`` hold ``Q(s_t, a_t)`` of the
    collecting policy (the prediction the Q loss regresses), so ``clip_range_vf`` and ``train/explained_variance``
    refer to the Q head.

    :param policy: ``"MlpPolicy"``, ``"CnnPolicy"``, ``"MultiInputPolicy"`` (the Q-head policies of
        :mod:`~ordergrad_rl.agents.ppo_q_critic.policies`) or a subclass of
        :class:`~ordergrad_rl.agents.common.policies.OrderGradPolicyMixin` (built with ``critic="q"``).
    :param env: env id (built with ``make_sb3_vec_env(env, n_envs, seed)``), ``gym.Env`` or ``VecEnv``; ``Discrete``
        actions.
    :param objective: order-statistic objective spec that fixes ``k`` (``"top9@10"``), or one without ``@K`` and
        ``k``; ``model.objective`` is the parsed, bound :class:`~ordergrad_rl.core.Objective`.
    :param k: the number of action draws, if the spec has no ``@K``.
    :param n_episodes: refused (episodic mode's; this algorithm collects ``n_steps`` per env).
    :param advantage: ``"q_critic"`` (the only mode; the argument is OrderGradPPO's).
    :param n_envs: number of envs built from an env id (default 1).
    :param learning_rate: as in SB3's PPO.
    :param n_steps: steps per env per rollout (default 2048).
    :param batch_size: minibatch size in steps (default 64, SB3's).
    :param n_epochs: passes over the rollout per update.
    :param gamma: discount (default 0.99).
    :param gae_lambda: lambda of the lambda-returns.
    :param clip_range: surrogate clipping parameter (or schedule).
    :param clip_range_vf: clipping of ``Q(s, a)`` around its collected value.
    :param normalize_advantage: SB3's centring and scaling of each minibatch's advantages.
    :param reward_to_go: refused (episodic mode's).
    :param group_size: refused (episodic mode's).
    :param ent_coef: entropy coefficient (``None``: 0.0).
    :param vf_coef: Q loss coefficient.
    :param max_grad_norm: gradient-norm clipping threshold.
    :param use_sde: gSDE exploration, as in SB3.
    :param sde_sample_freq: resample the gSDE noise every n steps (-1: once per rollout).
    :param rollout_buffer_class: a subclass of SB3's ``RolloutBuffer`` or ``DictRolloutBuffer``.
    :param rollout_buffer_kwargs: extra keyword arguments of the buffer.
    :param target_kl: early-stop an update when the approximate KL exceeds 1.5 x this.
    :param stats_window_size: episodes averaged by ``rollout/ep_rew_mean`` and ``rollout/ep_len_mean``.
    :param tensorboard_log: TensorBoard log dir.
    :param policy_kwargs: keyword arguments of the policy.
    :param verbose: 0 silent, 1 info, 2 debug.
    :param seed: random seed. Unlike SB3's algorithms, which reset an env id's env unseeded, an id without a native
        batch becomes SB3's ``make_vec_env(id, n_envs, seed)``: with ``seed=None`` it draws the envs' seeds from
        NumPy's global generator (one draw at construction).
    :param device: torch device.
    :param _init_setup_model: build the networks at construction.
    """

    saved_as = "OrderGradPPO"
    run_name_estimator = "qcritic"
    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = Q_CRITIC_POLICY_ALIASES
    advantages: tuple[str, ...] = (Q_CRITIC,)
    # The constructor's defaults for None (the rollout, SB3's gamma, ent_coef 0.0); episodic mode's n_episodes and
    # reward_to_go take None only.
    default_when_none: ClassVar[tuple[str, ...]] = ("n_steps", "batch_size", "gamma", "ent_coef")
    rollout_buffer: RolloutBuffer

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: AgentEnv | str,
        objective: ObjectiveLike = "mean",
        k: int | None = None,
        n_episodes: None = None,
        advantage: str = Q_CRITIC,
        n_envs: int | None = None,
        learning_rate: float | Schedule = 3e-4,
        n_steps: int | None = None,
        batch_size: int | None = None,
        n_epochs: int = 10,
        gamma: float | None = None,
        gae_lambda: float = 0.95,
        clip_range: float | Schedule = 0.2,
        clip_range_vf: float | Schedule | None = None,
        normalize_advantage: bool = True,
        reward_to_go: None = None,
        group_size: None = None,
        ent_coef: float | None = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        rollout_buffer_class: type[RolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        target_kl: float | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        check_env_given(type(self).__name__, env, _init_setup_model)
        check_advantage(advantage, self.advantages)
        check_ppo_arguments(
            learning_rate,
            gamma,
            ent_coef,
            max_grad_norm,
            policy_kwargs,
            n_epochs,
            clip_range,
            target_kl,
            vf_coef,
            gae_lambda,
            clip_range_vf,
        )
        check_arguments(
            self.argument_checks(),
            ent_coef=ent_coef,
            normalize_advantage=normalize_advantage,
            rollout_buffer_kwargs=rollout_buffer_kwargs,
            sde_sample_freq=sde_sample_freq,
        )
        batch_size = check_int("batch_size", MIN_BATCH_SIZE if batch_size is None else batch_size, 2)
        n_steps = DEFAULT_N_STEPS if n_steps is None else check_int("n_steps", n_steps, 1)
        seed = check_seed(seed)
        super().__init__(
            policy,
            build_env(env, n_envs, seed),
            learning_rate=learning_rate,
            n_steps=n_steps,
            batch_size=batch_size,
            n_epochs=n_epochs,
            gamma=0.99 if gamma is None else gamma,
            gae_lambda=gae_lambda,
            clip_range=clip_range,
            clip_range_vf=clip_range_vf,
            normalize_advantage=bool(normalize_advantage),
            ent_coef=0.0 if ent_coef is None else ent_coef,  # None: this mode's 0.0 (the ranked bonus is episodic's)
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            rollout_buffer_class=rollout_buffer_class,
            rollout_buffer_kwargs=rollout_buffer_kwargs,
            target_kl=target_kl,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
        )
        self._init_q_critic(objective, k, n_episodes, normalize_advantage, reward_to_go, group_size)
        if _init_setup_model:
            self._setup_model()

    def _init_q_critic(
        self,
        objective: ObjectiveLike,
        k: int | None,
        n_episodes: None,
        normalize_advantage: bool | str,
        reward_to_go: bool | None,
        group_size: int | None,
    ) -> None:
        """Check the arguments and set ``objective``, ``k``, ``advantage`` (``n_episodes`` None).

        :raises ValueError: episodic mode's arguments (``group_size``, ``normalize_advantage="group"``,
            ``reward_to_go``, ``n_episodes``), an objective with reward channels, a non-``Discrete`` action space, an
            objective without its number of action draws ``k``, or ``policy_kwargs["critic"]`` other than ``"q"``.
        """
        check_q_critic_group_size(group_size)
        check_q_critic_reward_to_go(reward_to_go)
        self._check_discrete()
        check_q_critic_n_episodes(n_episodes)
        parsed = parse_objective(objective, k)
        if isinstance(parsed, ChannelObjective):
            raise ValueError(
                f"objective {str(parsed)!r} has reward channels, which are for advantage='episodic' (a channel is an "
                "episode sum); Q-critic mode ranks the env reward's returns of its action draws: pass one objective "
                "(e.g. 'top9@10')"
            )
        if not parsed.is_bound:
            raise ValueError(
                f"advantage='q_critic' needs the number of action draws k of {str(parsed)!r}: write it in the spec "
                "(e.g. 'top9@10') or pass k"
            )
        self._check_policy_critic(Q_CRITIC, ("q",))
        self._set_objective(parsed)
        self.n_episodes = None
        self.reward_to_go = False
        self.normalize_advantage = bool(normalize_advantage)
        self.advantage = Q_CRITIC

    @classmethod
    def load(
        cls: type[SelfQCritic],
        path: Any,
        env: AgentEnv | str | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfQCritic:
        """SB3's ``load`` (see :meth:`OrderGradAlgorithmMixin.load`).

        :raises ValueError: as there.
        """
        kwargs = {**kwargs, **sb3_load_options(custom_objects, print_system_info, force_reset)}
        kwargs = cls.load_kwargs(kwargs)
        cls.refuse_none_defaults(kwargs)
        return super().load(path, env=env, device=device, **kwargs)

    @classmethod
    def argument_checks(cls) -> dict[str, Callable[[Any], object]]:
        return {
            **super().argument_checks(),
            "ent_coef": check_q_critic_ent_coef,
            "normalize_advantage": check_q_critic_normalize_advantage,
            "group_size": check_q_critic_group_size,
            "n_episodes": check_q_critic_n_episodes,
            "reward_to_go": check_q_critic_reward_to_go,
        }

    def _check_discrete(self) -> None:
        """``ValueError`` for an action space other than ``Discrete`` (none yet while SB3's ``load`` builds the model
        without an env)."""
        action_space = getattr(self, "action_space", None)
        if action_space is not None and not isinstance(action_space, spaces.Discrete):
            raise ValueError(
                f"advantage='q_critic' needs a Discrete action space (one Q-value per action), got "
                f"{action_space}; use advantage='episodic' for other action spaces"
            )

    def _setup_model(self) -> None:
        self._restore_objective()
        self._check_discrete()
        if not (isinstance(self.policy_class, type) and issubclass(self.policy_class, OrderGradPolicyMixin)):
            raise ValueError(
                f"policy {self.policy_class!r} has no Q critic: use 'MlpPolicy', 'CnnPolicy', 'MultiInputPolicy' or "
                "a subclass of ordergrad_rl.agents.common.policies.OrderGradPolicyMixin"
            )
        buffer_class = self.rollout_buffer_class
        if buffer_class is not None and not issubclass(buffer_class, (RolloutBuffer, DictRolloutBuffer)):
            raise ValueError(
                f"advantage='q_critic' uses SB3's step-based rollouts: rollout_buffer_class must subclass "
                f"RolloutBuffer or DictRolloutBuffer, got {buffer_class}"
            )
        self._rollout_episode_returns: list[float] = []
        self._collected_q: list[tuple[th.Tensor, th.Tensor]] = []
        # The episodic policy classes become their Q-head versions, so a save names a class that carries its critic
        # and loads into SB3's PPO with its Q head; a user's own class is built with critic="q", while the stored
        # policy_kwargs stay the user's (SB3's load compares them).
        self.policy_class = Q_CRITIC_POLICIES.get(self.policy_class, self.policy_class)
        with lent_attributes(self, policy_kwargs={**self.policy_kwargs, "critic": "q"}):
            super()._setup_model()

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_rollout_episode_returns", "_collected_q"]

    # ------------------------------------------------------------------ collection
    def _q_policy(self) -> OrderGradPolicyMixin:
        """The policy, an :class:`OrderGradPolicyMixin` with the per-action Q head (``_setup_model`` refuses other
        classes)."""
        assert isinstance(self.policy, OrderGradPolicyMixin)
        return self.policy

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: RolloutBuffer,
        n_rollout_steps: int,
    ) -> bool:
        """SB3's step-based collection (lambda-returns included), then the OrderGrad advantages.

        The callback's ``on_rollout_end`` comes after them, as in SB3's PPO and the episodic agents: it sees the
        advantages the update trains on in ``rollout_buffer.advantages`` and this rollout's ``risk/*`` in the logger.

        :return: False if a callback stopped training.
        """
        self._rollout_episode_returns = []
        check_finite_step(self._last_obs, None, "at the start of a rollout (the reset observation)")
        checked = FiniteStepCheckVecEnv(env, lambda: self.num_timesteps)
        with self._q_policy().recording_q_values() as records:
            held = _RolloutEndHeld(callback)
            if not super().collect_rollouts(checked, held, rollout_buffer, n_rollout_steps):  # type: ignore[arg-type]
                return False
        # The collector's own Q(s, .) and pi(.|s), one record per step: no second pass over the rollout.
        self._collected_q = records
        self._compute_advantages()
        self._record_rollout_logs()
        callback.on_rollout_end()
        return True

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        super()._update_info_buffer(infos, dones)
        # Monitor's (undiscounted) returns of the episodes finished in this rollout, for the risk/ profile.
        self._rollout_episode_returns.extend(
            float(info["episode"]["r"]) for info in infos if info.get("episode") is not None
        )

    def _rollout_q_values(self) -> tuple[th.Tensor, th.Tensor]:
        """``Q(s_t, .)`` and ``pi(.|s_t)`` of the rollout's states, ``[n_steps * n_envs, |A|]`` step-major: the
        collector's records if complete, else one batched pass of the network over the buffer."""
        buffer = self.rollout_buffer
        records, self._collected_q = self._collected_q, []
        if len(records) == buffer.buffer_size:
            n_actions = records[0][0].shape[-1]
            return (
                th.stack([q for q, _ in records]).reshape(-1, n_actions),
                th.stack([p for _, p in records]).reshape(-1, n_actions),
            )
        n_states = buffer.buffer_size * buffer.n_envs
        q_chunks, prob_chunks = [], []
        with th.no_grad():
            for start in range(0, n_states, _EVAL_CHUNK):
                chunk = slice(start, start + _EVAL_CHUNK)
                if isinstance(buffer.observations, dict):
                    obs: Any = {key: _flat_steps(value)[chunk] for key, value in buffer.observations.items()}
                else:
                    obs = _flat_steps(buffer.observations)[chunk]
                q, distribution = self._q_policy().q_values(obs_as_tensor(obs, self.device))
                q_chunks.append(q)
                prob_chunks.append(action_probs(distribution))
        return th.cat(q_chunks), th.cat(prob_chunks)

    def _compute_advantages(self) -> None:
        """``advantages`` <- :func:`q_critic_advantages`, ``values`` <- ``Q(s_t, a_t)``."""
        buffer = self.rollout_buffer
        shape = buffer.returns.shape  # [n_steps, n_envs]
        q, probs = self._rollout_q_values()
        actions = th.as_tensor(buffer.actions.reshape(-1), device=q.device).long()
        returns = th.as_tensor(buffer.returns.reshape(-1), device=q.device)
        advantages = q_critic_advantages(q, probs, actions, returns, self.objective)  # type: ignore[arg-type]
        buffer.advantages[:] = advantages.reshape(shape).cpu().numpy()
        buffer.values[:] = q.gather(-1, actions[:, None]).reshape(shape).cpu().numpy()
        entropy = -(probs * th.log(probs.clamp_min(1e-12))).sum(-1)
        self._rollout_entropy = float(entropy.mean())

    def _record_rollout_logs(self) -> None:
        """``rollout/entropy`` (mean policy entropy over the rollout's states) and ``risk/*`` of the returns of the
        episodes finished during the rollout (none if no episode ended or the env has no ``Monitor``)."""
        self.logger.record("rollout/entropy", self._rollout_entropy)
        if self._rollout_episode_returns:
            record_risk_profile(self.logger, TRAIN_PREFIX, np.asarray(self._rollout_episode_returns))

    def train(self) -> None:
        """SB3's PPO update (per-minibatch normalization, and the value loss = the Q loss), logging ``train/q_loss``
        in place of ``train/value_loss``."""
        super().train()
        q_loss = pop_record(self.logger, "train/value_loss")
        if q_loss is not None:
            self.logger.record("train/q_loss", q_loss)


#: Release 0.1.0's name of the Q-critic mode (then a mixin of OrderGradPPO); the algorithm is now its own class.
QCriticMixin = OrderGradQCriticPPO
