"""Finite-step checks of the OrderGrad agents: a clear error at the step where an env returns a NaN or infinite
observation or reward, instead of a failure deep inside SB3 or torch later; the action spaces SB3's policies
would act in wrongly and the observation spaces SB3 encodes wrongly, or either of them that SB3 cannot build a
policy for; and reward normalizations whose running scale changes the ranks of the returns.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sized
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import NormalizeReward
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, unwrap_vec_normalize
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from ordergrad_rl.common.warning_util import user_stacklevel
from ordergrad_rl.envs.sb3_vec_env import check_batched_observation_space


def check_action_space(action_space: spaces.Space) -> None:
    """``ValueError`` for an action space SB3's policies act in wrongly or cannot be built for: a ``Discrete`` or
    ``MultiDiscrete`` whose ``start`` is not 0, a ``MultiDiscrete`` whose ``nvec`` has more than one dimension.

    SB3's categorical policies draw actions ``0 .. n-1`` whatever the space's ``start``, so an env with
    ``Discrete(3, start=-1)`` would be sent 2 for an action it does not have and never -1 (SB3's env checker only
    warns). A ``MultiDiscrete([[2, 3], [2, 2]])`` failed inside torch while the policy was built ("empty(): argument
    'size' ... must be tuple of ints"). Refused before the first step instead.
    """
    check_multi_discrete_shape(
        action_space, "action space", "a gymnasium.ActionWrapper reshaping the actions of MultiDiscrete(nvec.flatten())"
    )
    if isinstance(action_space, spaces.Discrete | spaces.MultiDiscrete) and np.any(action_space.start != 0):
        raise ValueError(
            f"the env's action space {action_space} starts at {np.asarray(action_space.start).tolist()}, but SB3's "
            "policies draw actions from 0: shift the actions to start at 0 (a gymnasium.ActionWrapper adding the start)"
        )


#: The action spaces SB3's policies act in (``make_proba_distribution``'s): every algorithm's supported action spaces
#: are among them (MaskablePPO's and QR-DQN's are fewer; SB3 checks those).
POLICY_ACTION_SPACES: tuple[type[spaces.Space], ...] = (
    spaces.Box,
    spaces.Discrete,
    spaces.MultiDiscrete,
    spaces.MultiBinary,
)


def check_policy_action_space(action_space: spaces.Space) -> None:
    """``ValueError`` for an action space that no SB3 policy acts in (``Text``, ``Sequence``, ``Graph``, ``OneOf``,
    ``Tuple``, ``Dict``, ...), naming the space and the ones SB3 acts in (:data:`POLICY_ACTION_SPACES`).

    SB3's constructor refused them with a bare ``AssertionError`` ("The algorithm only supports (<class ...>, ...)"),
    after the env was wrapped; observation spaces of these kinds are refused with a ``ValueError`` naming the fix
    (:func:`check_observation_space`), and the action spaces now are too, before SB3's constructor runs.
    """
    if isinstance(action_space, POLICY_ACTION_SPACES):
        return
    names = space_names(POLICY_ACTION_SPACES)
    text = (
        "; for a Text, a MultiDiscrete of character indices in its charset, [len(charset)] * max_length"
        if isinstance(action_space, spaces.Text)
        else ""
    )
    raise ValueError(
        f"the env's action space {action_space} is a {type(action_space).__name__}, which SB3's policies cannot act "
        f"in: they act in {names} action spaces. Give the agent one of those and turn its actions into the env's "
        f"(a gymnasium.ActionWrapper whose action_space is one{text})"
    )


def check_algorithm_action_space(
    action_space: spaces.Space | None, supported: tuple[type[spaces.Space], ...], algorithm: str
) -> None:
    """``ValueError`` for an action space SB3's policies act in (:data:`POLICY_ACTION_SPACES`) but ``algorithm`` does
    not (the ``supported`` spaces it passes SB3's constructor: MaskablePPO's ``Discrete``, ``MultiDiscrete`` and
    ``MultiBinary``, QR-DQN's ``Discrete``), naming the space, those it acts in and the agents for the others.

    SB3's constructor refused them with a bare ``AssertionError`` ("The algorithm only supports (<class ...>, ...)").
    ``None`` (no env yet: SB3's ``load``) and the spaces no policy acts in are left to
    :func:`check_policy_action_space`, whose message names the wrapper that fixes them.
    """
    if not isinstance(action_space, POLICY_ACTION_SPACES) or isinstance(action_space, supported):
        return
    raise ValueError(
        f"the env's action space {action_space} is a {type(action_space).__name__}, which {algorithm} does not act "
        f"in: it acts in {space_names(supported)} action spaces only. OrderGradPPO, OrderGradREINFORCE and "
        f"OrderGradRecurrentPPO act in {space_names(POLICY_ACTION_SPACES)} action spaces"
    )


def space_names(kinds: tuple[type[spaces.Space], ...]) -> str:
    """The names of the space classes ``kinds``, as messages list them: ``Discrete, MultiDiscrete or MultiBinary``."""
    *first, last = (kind.__name__ for kind in kinds)
    return f"{', '.join(first)} or {last}" if first else last


def check_observation_space(observation_space: spaces.Space, key: str = "") -> None:
    """``ValueError`` for an observation space (or one inside a ``Dict``) SB3 encodes wrongly or cannot build a
    network for: a ``Discrete`` or ``MultiDiscrete`` whose ``start`` is not 0, a ``MultiDiscrete`` whose ``nvec`` has
    more than one dimension, a ``Box`` of shape ``()``.

    SB3 one-hot encodes such observations as ``0 .. n-1`` whatever the space's ``start``, so ``Discrete(5, start=1)``
    trains until the env first shows 5 and then fails inside torch ("Class values must be smaller than
    num_classes"), a negative start at its first negative one. A ``MultiDiscrete([[2, 3], [2, 2]])`` failed inside
    SB3 or torch while the policy was built, a ``Box`` of shape ``()`` inside torch's ``Flatten`` at the first
    step. Refused before the first step instead.

    A ``Tuple`` (``Blackjack-v1``'s) raises SB3's ``NotImplementedError``, with its message, plus the wrapper that
    makes it one SB3 takes; so does a ``Dict`` or ``Tuple`` inside a ``Dict``, naming its key (SB3's "Nested
    observation spaces are not supported" named neither). A ``Text``, ``Sequence``, ``Graph`` or ``OneOf``
    (:func:`~ordergrad_rl.envs.sb3_vec_env.check_batched_observation_space`) raises a ``ValueError`` naming the way to
    a fixed shape: SB3's ``DummyVecEnv`` failed on them while wrapping the env ("'NoneType' object is not iterable",
    "Unsupported structured space").
    """
    flatten = "gymnasium.wrappers.FlattenObservation"
    if isinstance(observation_space, spaces.Dict):
        for name, space in observation_space.spaces.items():
            if isinstance(space, spaces.Dict | spaces.Tuple):
                # SB3's message names neither the key nor a way out.
                raise NotImplementedError(
                    f"the env's observation space{key}[{name!r}] {space} is a {type(space).__name__} inside a Dict: "
                    "SB3 does not support nested observation spaces. Give its entries keys of their own in the outer "
                    "Dict (a gymnasium.ObservationWrapper), or flatten the whole observation to one Box "
                    f"({flatten})"
                )
            check_observation_space(space, f"{key}[{name!r}]")
        return
    if isinstance(observation_space, spaces.Tuple):
        raise NotImplementedError(
            f"{observation_space} observation space is not supported: flatten it ({flatten}; a Tuple of Discrete "
            "spaces, as Blackjack-v1's, becomes their one-hot codes)"
        )
    check_batched_observation_space(observation_space, key)
    check_multi_discrete_shape(observation_space, f"observation space{key}", flatten)
    if isinstance(observation_space, spaces.Box) and observation_space.shape == ():
        raise ValueError(
            f"the env's observation space{key} {observation_space} has shape (), which SB3's policies cannot "
            f"flatten: give the observations a shape of (1,) ({flatten})"
        )
    if isinstance(observation_space, spaces.Discrete | spaces.MultiDiscrete) and np.any(observation_space.start != 0):
        raise ValueError(
            f"the env's observation space{key} {observation_space} starts at "
            f"{np.asarray(observation_space.start).tolist()}, but SB3 one-hot encodes observations from 0: shift them "
            "to start at 0 (a gymnasium.ObservationWrapper subtracting the start)"
        )


def check_multi_discrete_shape(space: spaces.Space, name: str, fix: str) -> None:
    """``ValueError`` for a ``MultiDiscrete`` ``space`` whose ``nvec`` is not one-dimensional: SB3 builds one
    categorical per entry of a flat ``nvec`` only.

    :param name: what the space is, e.g. ``"action space"``, named in the message.
    :param fix: the wrapper that flattens it, named in the message.
    """
    if isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim != 1:
        raise ValueError(
            f"the env's {name} is a MultiDiscrete with nvec {space.nvec.tolist()} of shape {space.nvec.shape}, but "
            f"SB3's policies take a one-dimensional nvec only: flatten it ({fix})"
        )


#: The start of :func:`warn_if_rewards_normalized`'s message (a ``warnings.filterwarnings`` pattern).
REWARDS_NORMALIZED_WARNING = r"objective .* ranks the episode returns of the rewards the agent is trained on"


def warn_if_rewards_normalized(venv: VecEnv, objective: str) -> None:
    """``UserWarning`` where ``venv`` divides its rewards by a running scale (SB3's ``VecNormalize(norm_reward=True)``,
    Gymnasium's ``NormalizeReward`` around its envs) and ``objective`` ranks the episode returns.

    A ranked objective ranks the returns of the rewards the agent steps on, as SB3 trains on them. A running scale
    changes within a rollout (and ``VecNormalize`` clips each reward at ``clip_reward``), so the normalized returns are
    not ranked as the env's returns are: the tail trained is not the env's tail. The mean is linear in the rewards and
    is left alone, as in SB3.

    :param venv: the training env.
    :param objective: the objective's spec, named in the warning.
    """
    normalize = unwrap_vec_normalize(venv)
    if normalize is not None and normalize.norm_reward:
        wrapper = "VecNormalize(norm_reward=True), which divides them by a running std and clips them at clip_reward"
        fix = "use VecNormalize(norm_reward=False)"
    elif any(venv.env_is_wrapped(NormalizeReward)):
        wrapper = "gymnasium.wrappers.NormalizeReward, which divides them by a running std"
        fix = "drop the NormalizeReward wrapper"
    else:
        return
    warnings.warn(
        f"objective {objective!r} ranks the episode returns of the rewards the agent is trained on, and the env "
        f"normalizes them with {wrapper}: the scale changes during a rollout, so episodes are not ranked by their "
        f"returns: {fix}, or scale them by a constant (gymnasium.wrappers.TransformReward); the agent normalizes "
        "its episode weights itself (normalize_advantage)",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def warn_if_normalization_missing(venv: VecEnv | None, saved: Mapping[str, bool] | None) -> None:
    """``UserWarning`` where a model whose save records a ``VecNormalize`` of the observations (``saved``:
    :func:`~ordergrad_rl.agents.common.saving.saved_vec_normalize`) is given ``venv`` without one: its policy then acts
    and trains on raw observations, silently (SB3 saves the statistics apart, and its ``load`` says nothing). No
    env (``None``), a save without the record, or one of a ``VecNormalize`` of the rewards only: nothing to say.
    """
    if venv is None or not saved or not saved.get("norm_obs") or unwrap_vec_normalize(venv) is not None:
        return
    warnings.warn(
        "the model was saved acting on observations normalized by VecNormalize, and its env has no VecNormalize: "
        "its policy acts (and trains) on raw observations. Wrap the env in the statistics saved beside the model, "
        "VecNormalize.load(path, venv) (set its training=False to evaluate), and pass that env",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def _finite(array: Any) -> bool:
    """Whether every entry of ``array`` is finite (integer and boolean arrays always are).

    ``np.count_nonzero``, not ``.all()``: run at every step of a collection loop, a ufunc reduction costs several
    times what it does alone (scripts/bench_agents.py, section 0), and ``count_nonzero`` a fraction of it."""
    array = np.asarray(array)
    return array.dtype.kind not in "fc" or np.count_nonzero(np.isfinite(array)) == array.size


def _all_finite(obs: Any) -> bool:
    return all(map(_finite, obs.values() if isinstance(obs, Mapping) else (obs,)))


#: The largest float32: a larger reward becomes inf in SB3's ``DummyVecEnv``, which holds rewards as float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def finite_step_error(obs: Any, rewards: np.ndarray | None, where: str) -> str | None:
    """A message naming the first env whose observation or reward is NaN or infinite, or ``None``.

    :param obs: ``[n_envs, ...]`` observations (or a dict of them), as a VecEnv returns them.
    :param rewards: ``[n_envs]`` rewards, or ``None`` at a reset.
    :param where: when it happened, e.g. ``"at num_timesteps=1024"``.
    """
    if _all_finite(obs) and (rewards is None or _finite(rewards)):
        return None  # the common case, one vectorized test per array
    if rewards is not None:
        bad = np.flatnonzero(~np.isfinite(np.asarray(rewards, dtype=np.float64)))
        if bad.size:
            i = int(bad[0])
            reward = float(rewards[i])
            # A finite reward past float32's range arrives as inf from SB3's DummyVecEnv, which holds them as float32.
            beyond = (
                ""
                if np.isnan(reward)
                else f" and within +-{FLOAT32_MAX:.1e} (float32, as SB3's DummyVecEnv holds them)"
            )
            return f"env {i} returned the reward {reward} {where}: rewards must be finite{beyond}"
    for key, array in obs.items() if isinstance(obs, Mapping) else [(None, obs)]:
        array = np.asarray(array)
        if array.dtype.kind not in "fc":
            continue
        flat = array.reshape(array.shape[0], -1)
        bad_env = np.flatnonzero(~np.isfinite(flat).all(axis=1))
        if bad_env.size:
            i = int(bad_env[0])
            j = int(np.flatnonzero(~np.isfinite(flat[i]))[0])
            name = "observation" if key is None else f"observation[{key!r}]"
            return (
                f"env {i} returned an {name} with {flat[i, j].item()} at flat index {j} {where}: "
                "observations must be finite (check the env, or wrap it in a normalization that cannot divide by 0)"
            )
    return None


def check_step_returns(rewards: Any, dones: Any, infos: Any, n_envs: int, where: str) -> None:
    """``ValueError`` unless a VecEnv's step returned what SB3's VecEnvs return: ``n_envs`` real rewards, ``n_envs``
    boolean (or integer) dones and ``n_envs`` infos. A custom VecEnv's ``[n_envs, 1]`` rewards or float dones failed
    in NumPy inside the rollout buffer ("object too deep for desired array"), and complex rewards lost their
    imaginary part.

    :param where: when it happened, e.g. ``"at num_timesteps=1024"``.
    """
    rewards, dones = np.asarray(rewards), np.asarray(dones)  # no copy of a VecEnv's arrays: run at every step
    problem = None
    if rewards.shape != (n_envs,):
        problem = f"rewards of shape {rewards.shape}"
    elif rewards.dtype.kind not in "biuf":
        problem = f"rewards of dtype {rewards.dtype}"
    elif dones.shape != (n_envs,) or dones.dtype.kind not in "biu":
        problem = f"dones of shape {dones.shape} and dtype {dones.dtype}"
    elif not isinstance(infos, Sized) or len(infos) != n_envs:
        problem = f"{len(infos)} infos" if isinstance(infos, Sized) else f"infos {infos!r}"
    if problem is not None:
        raise ValueError(
            f"the VecEnv's step returned {problem} for {n_envs} envs {where}: a VecEnv returns one real reward, "
            "one bool done and one info dict per env (rewards and dones of shape (n_envs,))"
        )


def check_finite_step(obs: Any, rewards: np.ndarray | None, where: str) -> None:
    """``ValueError`` from :func:`finite_step_error` if an observation or reward is not finite."""
    message = finite_step_error(obs, rewards, where)
    if message is not None:
        raise ValueError(message)


class FiniteStepCheckVecEnv(VecEnvWrapper):
    """Passes every step of ``venv`` through :func:`check_step_returns` and :func:`check_finite_step` before the
    collector (and the policy) sees it.

    Used around SB3's own collection loop (Q-critic mode); the episodic collector calls the check directly.

    :param venv: the training env.
    :param timesteps: the algorithm's ``num_timesteps`` now (named in the error message).
    """

    def __init__(self, venv: VecEnv, timesteps: Callable[[], int]) -> None:
        super().__init__(venv)
        self._timesteps = timesteps

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        check_finite_step(obs, None, "at a reset")
        return obs

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        where = f"at num_timesteps={self._timesteps() + self.num_envs}"
        check_step_returns(rewards, dones, infos, self.num_envs, where)
        check_finite_step(obs, rewards, where)
        return obs, rewards, dones, infos
