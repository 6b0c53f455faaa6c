"""Actor-critic policies for the OrderGrad agents: SB3's policies plus the options the paper's protocols need.

``"MlpPolicy"``, ``"CnnPolicy"`` and ``"MultiInputPolicy"`` of :class:`~ordergrad_rl.agents.OrderGradPPO` and
:class:`~ordergrad_rl.agents.OrderGradREINFORCE` resolve to the classes below. Everything SB3's
``ActorCriticPolicy`` accepts still works (``net_arch``, ``activation_fn``, ``ortho_init``, ``log_std_init``,
``features_extractor_class``, ``optimizer_class`` ...); the extra keyword options are:

* ``learn_log_std=False`` freezes the Gaussian log-std at ``log_std_init`` (fixed exploration noise);
* ``zero_init_action_net=True`` initializes the last (action) layer at zero, so training starts from equal
  logits / zero means instead of a random corner;
* ``critic`` is passed by the algorithm when it builds the policy (it is not stored in the algorithm's
  ``policy_kwargs``): ``"q"`` in Q-critic mode (``Discrete`` actions), where the value head outputs one Q-value per
  action (see :class:`OrderGradPolicyMixin`); otherwise SB3's value head (``"value"``).

Episodic mode trains any SB3 ``ActorCriticPolicy`` (these classes, or a user's subclass of SB3's) on whole-episode
weights: the value head is built as SB3 builds it, so a save loads into SB3's ``PPO``, but the update never trains
it nor uses its values (:func:`evaluate_actions_without_value`, :func:`value_head_unused`; the collection acts
through ``forward`` as SB3's does where a hook or a subclass could tell, and through the actor alone otherwise:
:func:`forward_observed`). OrderGradPPO fits it in its own ways, as
the critic of ``critic_when_tied`` (:mod:`ordergrad_rl.agents.common.tied_critic`) or the ``value_baseline=True``.

The paper's portfolio protocol (linear policy, zero-initialized output, fixed logit noise sigma = 0.35)::

    policy_kwargs = dict(net_arch=dict(pi=[], vf=[]), zero_init_action_net=True,
                         log_std_init=math.log(0.35), learn_log_std=False)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.distributions import Distribution, StateDependentNoiseDistribution
from stable_baselines3.common.policies import (
    ActorCriticCnnPolicy,
    ActorCriticPolicy,
    BasePolicy,
    MultiInputActorCriticPolicy,
)
from stable_baselines3.common.preprocessing import is_image_space_channels_first
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    CombinedExtractor,
    FlattenExtractor,
    MlpExtractor,
    NatureCNN,
)
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule

from ordergrad_rl.agents.common.sb3_compat import CRITIC_PARAMETERS

#: Critic kinds a policy can carry. ``"value"``: SB3's state-value head (plain SB3 behaviour); ``"q"``: a per-action
#: Q head (Q-critic mode); ``"none"``: no value layers (``vf=[]``) and zero values, what episodic models saved
#: before the value head was kept held in their ``policy_kwargs`` (such saves do not load into SB3's ``PPO``).
CRITICS: tuple[str, ...] = ("none", "value", "q")

#: The smallest image side SB3's ``NatureCNN`` (``"CnnPolicy"``'s extractor) reads: its 8x8 / 4, 4x4 / 2 and 3x3
#: convolutions leave nothing of a smaller one.
NATURE_CNN_MIN_SIDE = 36

#: What a critic kind holds, and how an SB3 model's actor gets into it (:meth:`OrderGradPolicyMixin.load_state_dict`).
_CRITIC_LAYOUTS: dict[str, tuple[str, str]] = {
    "q": (
        "a per-action Q head (one output per action)",
        "OrderGradPPO.from_sb3(model_or_path, env, advantage='q_critic', ...) copies its actor and starts the Q head "
        "fresh",
    ),
    "none": (
        "no critic (episodic mode trains none)",
        "the OrderGrad algorithm's from_sb3(model_or_path, env, ...) copies its actor (OrderGradRecurrentPPO's for a "
        "RecurrentPPO model)",
    ),
}

#: The actor that a policy without a critic (``critic="none"``) built where ``net_arch`` was not given, before it
#: took SB3's default for its features extractor (none after ``NatureCNN``, ``[64, 64]`` after the others): what
#: episodic saves without ``sb3_default_net_arch`` are rebuilt with (``EpisodicAlgorithmMixin._policy_build_kwargs``).
LEGACY_DEFAULT_ACTOR: tuple[int, ...] = (64, 64)


def actor_only_net_arch(net_arch: list[int] | dict[str, list[int]]) -> dict[str, list[int]]:
    """``net_arch`` with an empty value branch (``vf=[]``): without a critic, hidden value layers are dead weight.

    :param net_arch: SB3 ``net_arch`` as SB3's policy resolved it (``[]`` by default after ``NatureCNN``,
        ``dict(pi=[64, 64], vf=[64, 64])`` after the other extractors): a list (the actor's hidden layers),
        ``dict(pi=[...], vf=[...])`` (``vf`` is dropped) or SB3's older ``[dict(pi=[...], vf=[...])]``.
    """
    if isinstance(net_arch, list | tuple) and len(net_arch) == 1 and isinstance(net_arch[0], dict):
        net_arch = net_arch[0]  # SB3's older format, which SB3 still accepts (with a warning)
    if isinstance(net_arch, dict):
        return dict(pi=list(net_arch.get("pi", [])), vf=[])
    return dict(pi=list(net_arch), vf=[])


def evaluate_actions_without_value(
    policy: ActorCriticPolicy, obs: PyTorchObs, actions: th.Tensor
) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
    """``evaluate_actions`` of an actor-critic policy without running its value head: zero values.

    Episodic mode has no use for a value function: the advantages are whole-episode weights. Zero values
    ``[batch, 1]`` with no gradient make SB3's PPO value loss a constant 0, so the value head stays as built.

    :param policy: any SB3 ``ActorCriticPolicy`` (the action distribution comes from its ``get_distribution``).
    :param obs: observations ``[batch, *obs_shape]`` (or a dict of such).
    :param actions: actions ``[batch, *action_shape]``.
    :return: values ``[batch, 1]`` (zeros), log-likelihoods ``[batch]``, entropies ``[batch]`` (or None).
    """
    distribution = policy.get_distribution(obs)
    log_prob = distribution.log_prob(actions)
    return log_prob.new_zeros((log_prob.shape[0], 1)), log_prob, distribution.entropy()


@contextmanager
def value_head_unused(policy: ActorCriticPolicy) -> Iterator[None]:
    """Within the block, ``policy.evaluate_actions`` is :func:`evaluate_actions_without_value`.

    Lets SB3's ``PPO.train`` run unchanged in episodic mode on any actor-critic policy (a user's subclass of SB3's
    ``ActorCriticPolicy`` included): its value loss becomes a constant 0, and neither the value head nor a shared
    features extractor receives a value gradient.
    """
    # An instance attribute shadows the class's method for the block only; the policy object stays SB3's.
    policy.evaluate_actions = functools.partial(evaluate_actions_without_value, policy)  # type: ignore[method-assign]
    try:
        yield
    finally:
        del policy.evaluate_actions


def forward_observed(policy: BasePolicy, plain_forwards: tuple[Any, ...] = ()) -> bool:
    """Whether something could tell ``policy(obs)`` from :func:`act_without_critic`: a forward hook or pre-hook on
    the policy or any of its modules (W&B's ``wandb.watch``, activation statistics, quantization observers), a global
    one (``torch.nn.modules.module.register_module_forward_hook``), a ``forward`` of the policy's own class (a user's
    subclass, sb3-contrib's), or the Q critic's (whose ``forward`` can record its Q-values).

    The episodic collector reads it at each rollout's start; a hook registered in the middle of a rollout fires from
    the next one.

    :param plain_forwards: other ``forward`` functions that compute nothing but the actions, values and
        log-likelihoods (sb3-contrib's ``MaskableActorCriticPolicy.forward``), besides SB3's and the OrderGrad mixin's.
    """
    if type(policy).forward not in (ActorCriticPolicy.forward, OrderGradPolicyMixin.forward, *plain_forwards):
        return True
    if getattr(policy, "critic", "value") == "q":
        return True
    hooks = th.nn.modules.module
    if getattr(hooks, "_global_forward_hooks", None) or getattr(hooks, "_global_forward_pre_hooks", None):
        return True
    return any(module._forward_hooks or module._forward_pre_hooks for module in policy.modules())


def act_without_critic(
    policy: ActorCriticPolicy, obs: PyTorchObs, deterministic: bool = False, action_masks: np.ndarray | None = None
) -> tuple[th.Tensor, th.Tensor]:
    """The actions and log-likelihoods of SB3's ``policy.forward(obs)``, bit for bit (the same operations on the
    same random stream), without its value head: the episodic collection drops the values, and on CartPole-v1 the
    critic branch took 6% of the usage line's wall time (scripts/bench_agents.py, section 0). Only where
    :func:`forward_observed` is False.

    :param obs: observations ``[n_envs, *obs_shape]`` (or a dict of such), as tensors.
    :param action_masks: ``[n_envs, mask width]`` for sb3-contrib's maskable policies (``None``: not passed).
    :return: actions ``[n_envs, *action_shape]``, log-likelihoods ``[n_envs]``.
    """
    masks = {} if action_masks is None else {"action_masks": action_masks}  # SB3's policies take no masks
    distribution = policy.get_distribution(obs, **masks)
    actions = distribution.get_actions(deterministic=deterministic)
    log_prob = distribution.log_prob(actions)
    return actions.reshape((-1, *(policy.action_space.shape or ()))), log_prob


#: Observations per forward pass of :func:`predict_values` (bounds the memory of a long rollout's pass).
VALUE_CHUNK = 8192


def forward_in_chunks(
    policy: BasePolicy,
    observations: np.ndarray | dict[str, np.ndarray],
    forward: Callable[[PyTorchObs], th.Tensor],
) -> th.Tensor:
    """``forward`` of a rollout's stored observations (``[T, ...]`` or a dict of them) through ``policy``'s
    ``obs_to_tensor``, without gradients, in chunks of :data:`VALUE_CHUNK` (bounds the memory of a long rollout).

    :return: ``[T, ...]`` the chunks' outputs, concatenated on the policy's device.
    """
    size = len(next(iter(observations.values()))) if isinstance(observations, dict) else len(observations)
    outputs = []
    with th.no_grad():
        for start in range(0, size, VALUE_CHUNK):
            rows = slice(start, start + VALUE_CHUNK)
            chunk = (
                {key: value[rows] for key, value in observations.items()}
                if isinstance(observations, dict)
                else observations[rows]
            )
            obs, _ = policy.obs_to_tensor(chunk)
            outputs.append(forward(obs))
    return th.cat(outputs)


def predict_values(policy: ActorCriticPolicy, observations: np.ndarray | dict[str, np.ndarray]) -> np.ndarray:
    """``policy.predict_values`` of a rollout's stored observations (``[T, ...]`` or a dict of them), without
    gradients, in chunks of :data:`VALUE_CHUNK`.

    :return: ``[T]`` float32 values.
    """
    values = forward_in_chunks(policy, observations, policy.predict_values)
    return values.reshape(-1).cpu().numpy().astype(np.float32, copy=False)


def gsde_distribution(policy: Any) -> StateDependentNoiseDistribution | None:
    """The gSDE action distribution of ``policy``: an actor-critic's ``action_dist``, or its ``actor``'s (SB3's SAC);
    ``None`` for a policy without gSDE (``use_sde=False``)."""
    for owner in (policy, getattr(policy, "actor", None)):
        distribution = getattr(owner, "action_dist", None)
        if isinstance(distribution, StateDependentNoiseDistribution):
            return distribution
    return None


def resample_episode_noise(policy: Any, starts: np.ndarray) -> None:
    """gSDE: draw a fresh exploration matrix for each env that starts an episode (``starts``: ``[n_envs]`` bools,
    ``policy.reset_noise(n_envs)`` drawn before, so that it holds one matrix per env).

    A gSDE action's noise is a function of the state for as long as its matrix is kept, so episodes that share one
    (SB3's ``sde_sample_freq=-1`` keeps it for a whole rollout, and ``evaluate_policy`` for a whole evaluation) are
    not independent draws of the policy: from the same start they repeat each other, and a rank-based estimate or a
    risk profile over them is not the policy's. Training and evaluation therefore start each episode with its own;
    training's ``sde_sample_freq > 0`` also redraws every env's matrix every ``sde_sample_freq`` steps of a rollout
    (SB3's count, from the rollout's start).
    """
    n_envs = len(starts)
    if n_envs == 1:  # SB3 acts on a batch of one with its single exploration_mat, not the per-env matrices
        policy.reset_noise(1)
        return
    distribution = gsde_distribution(policy)
    assert distribution is not None, "resample_episode_noise needs a gSDE policy"
    with th.no_grad():  # SB3 samples with rsample; acting needs no graph
        fresh = distribution.weights_dist.sample((n_envs,))
        started = th.as_tensor(starts, device=fresh.device).view(-1, 1, 1)
        distribution.exploration_matrices = th.where(started, fresh, distribution.exploration_matrices)


def check_nature_cnn_input(
    extractor_class: type[BaseFeaturesExtractor], observation_space: spaces.Space, policy: str
) -> None:
    """``ValueError`` if ``extractor_class`` is SB3's ``NatureCNN`` and the observations are 3-D grids with a side
    under :data:`NATURE_CNN_MIN_SIDE` (MinAtar's 10x10xC): torch's "kernel size can't be greater than actual input
    size", or for float grids SB3's assertion that they are no images, named neither the size nor the extractor that
    fits (:class:`~ordergrad_rl.agents.GridCNN`); or channel-last images that reach the policy so (SB3 transposes
    uint8 ones only: float images with ``normalize_images=False``), whose first axis ``NatureCNN`` reads as the
    channels, failing in torch as above. Other spaces are left to ``NatureCNN``'s own checks.

    :param policy: the policy the message names (``"CnnLstmPolicy"`` ...).
    """
    if not (isinstance(extractor_class, type) and issubclass(extractor_class, NatureCNN)):
        return
    if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 3:
        return
    shape = observation_space.shape
    channel_first = is_image_space_channels_first(observation_space)
    sides = shape[1:] if channel_first else shape[:2]
    if min(sides) < NATURE_CNN_MIN_SIDE:
        raise ValueError(
            f"{policy}'s NatureCNN (SB3's) needs images of at least {NATURE_CNN_MIN_SIDE}x{NATURE_CNN_MIN_SIDE}, got "
            f"observations of shape {shape}: for small grids such as MinAtar's use "
            "policy_kwargs=dict(features_extractor_class=GridCNN) (from ordergrad_rl.agents)"
        )
    if not channel_first:
        # SB3's VecTransposeImage puts uint8 images channel-first before the policy sees them; other dtypes (float
        # images with normalize_images=False, SB3's advice for scaled ones) reach NatureCNN as they are.
        raise ValueError(
            f"{policy}'s NatureCNN (SB3's) reads the first axis as the channels (C, H, W), and the observations of "
            f"shape {shape} ({observation_space.dtype}) are channel-last, which SB3 transposes for uint8 images only: "
            f"transpose them to {(shape[2], shape[0], shape[1])} (a gymnasium.ObservationWrapper returning "
            "np.transpose(obs, (2, 0, 1))); SB3 reads images other than uint8 in [0, 255] with "
            "policy_kwargs=dict(normalize_images=False)"
        )


def check_extractor_reads_dict(
    extractor_class: type[BaseFeaturesExtractor], observation_space: spaces.Space, policy: str
) -> None:
    """``ValueError`` where SB3's ``CombinedExtractor`` (``MultiInputPolicy``'s) and ``Dict`` observations do not
    meet: the extractor on observations that are no ``Dict`` failed inside SB3 with "'Box' object has no attribute
    'spaces'" (as SB3's own algorithms do); SB3's ``FlattenExtractor`` or ``NatureCNN`` on a ``Dict`` failed inside
    torch at the first step ("'dict' object has no attribute 'flatten'": SB3 refuses only the names ``"MlpPolicy"``
    and ``"CnnPolicy"``, so ``MlpLstmPolicy`` or a policy class were built). Neither named the policy that reads the
    space. Other extractors (a user's may read a ``Dict``) are left alone.

    :param policy: the policy the message names (``"MultiInputLstmPolicy"`` ...); its ``Mlp``, ``Cnn`` and
        ``MultiInput`` siblings are the ones named as the fix.
    """
    if not isinstance(extractor_class, type):
        return
    combined = issubclass(extractor_class, CombinedExtractor)
    is_dict = isinstance(observation_space, spaces.Dict)
    if combined and not is_dict:
        mlp, cnn = (sibling_policy(policy, kind) for kind in ("Mlp", "Cnn"))
        raise ValueError(
            f"{policy}'s CombinedExtractor (SB3's) needs Dict observations, got {observation_space}: use {mlp} "
            f"({cnn} for images)"
        )
    if is_dict and issubclass(extractor_class, FlattenExtractor | NatureCNN):
        raise ValueError(
            f"{policy}'s {extractor_class.__name__} (SB3's) does not read Dict observations, got {observation_space}: "
            f"use {sibling_policy(policy, 'MultiInput')}"
        )


def sibling_policy(policy: str, kind: str) -> str:
    """The policy name of ``kind`` (``"Mlp"``, ``"Cnn"``, ``"MultiInput"``) in ``policy``'s family:
    ``sibling_policy("MlpLstmPolicy", "MultiInput")`` is ``"MultiInputLstmPolicy"``; ``"<kind>Policy"`` for a name
    outside the three (a class's)."""
    for prefix in ("MultiInput", "Mlp", "Cnn"):
        if policy.startswith(prefix) and policy.endswith("Policy"):
            return kind + policy[len(prefix) :]
    return f"{kind}Policy"


def action_probs(distribution: Distribution) -> th.Tensor:
    """``pi(.|s)`` ``[batch, |A|]`` of a ``Discrete`` action space's distribution (the Q critic's)."""
    categorical = distribution.distribution
    assert isinstance(categorical, th.distributions.Categorical), "a per-action Q critic needs Discrete actions"
    return categorical.probs


def refuse_q_critic(kwargs: dict[str, Any], policy: str) -> None:
    """``ValueError`` if ``kwargs`` ask a policy without a per-action Q head (sb3-contrib's) for ``critic=\"q\"``."""
    if kwargs.get("critic") == "q":
        raise ValueError(f"{policy} has no per-action Q critic: advantage='q_critic' is OrderGradPPO's")


class OrderGradPolicyMixin:
    """Adds ``learn_log_std``, ``zero_init_action_net`` and ``critic`` to an SB3 actor-critic policy.

    Mixed in front of ``ActorCriticPolicy`` or one of its subclasses; all other arguments pass through unchanged.

    :param observation_space: as in SB3's ``ActorCriticPolicy``.
    :param action_space: as in SB3's ``ActorCriticPolicy``.
    :param lr_schedule: as in SB3's ``ActorCriticPolicy``.
    :param critic: ``"value"`` (SB3's value head; episodic mode's update never trains it nor uses its values, see
        :func:`value_head_unused`: OrderGradPPO fits it in its own ways), ``"none"`` (older episodic saves, and
        OrderGradRecurrentPPO's episodic mode: ``evaluate_actions`` returns zero values and the value branch's
        ``net_arch`` is forced to ``vf=[]``; the actor's is SB3's default for the features extractor where
        ``net_arch`` is not given: none after ``NatureCNN``, ``[64, 64]`` after the others) or ``"q"`` (``Discrete``
        actions only: the value branch ends in ``|A|`` outputs ``Q(s, .)``; :meth:`q_values` returns them with the
        action distribution, ``forward`` / ``predict_values`` give ``V(s) = sum_a pi(a|s) Q(s, a)`` and
        ``evaluate_actions`` gives ``Q(s, a)`` as the "values", so SB3's PPO value loss becomes the Q loss).
    :param learn_log_std: if False, the Gaussian log-std stays at ``log_std_init`` (it gets no gradient, so the
        optimizer never moves it). Only meaningful for ``Box`` action spaces.
    :param zero_init_action_net: initialize the action layer's weights and bias at zero (applied after SB3's
        orthogonal initialization).
    """

    # What the mixin reads of SB3's ActorCriticPolicy (its types there).
    observation_space: spaces.Space
    action_space: spaces.Space
    features_extractor_class: type[BaseFeaturesExtractor]
    net_arch: list[int] | dict[str, list[int]]
    ortho_init: bool
    share_features_extractor: bool
    mlp_extractor: MlpExtractor
    action_net: th.nn.Module
    log_std: th.nn.Parameter
    value_net: th.nn.Linear
    optimizer_class: type[th.optim.Optimizer]
    optimizer_kwargs: dict[str, Any]
    optimizer: th.optim.Optimizer
    #: The policy string that names the class in its algorithm (``"CnnLstmPolicy"`` ...), for messages; ``None``: the
    #: class's name.
    policy_alias: str | None = None
    #: Inside :meth:`recording_q_values`: the list ``forward`` appends its ``(Q(s, .), pi(.|s))`` to.
    _q_records: list[tuple[th.Tensor, th.Tensor]] | None = None

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Schedule,
        *args: Any,
        critic: str = "value",
        learn_log_std: bool = True,
        zero_init_action_net: bool = False,
        **kwargs: Any,
    ) -> None:
        if critic not in CRITICS:
            raise ValueError(f"unknown critic {critic!r}; expected one of {CRITICS}")
        for name, flag in (("learn_log_std", learn_log_std), ("zero_init_action_net", zero_init_action_net)):
            if not isinstance(flag, bool):  # "False" would read as True
                raise ValueError(f"policy_kwargs['{name}'] must be True or False, got {flag!r}")
        if critic == "q" and not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"a per-action Q critic needs a Discrete action space, got {action_space}")
        if args:
            raise TypeError("pass the policy options by keyword (as SB3's policy_kwargs do)")
        # Set before super().__init__, which calls _build().
        self.critic = critic
        self.learn_log_std = learn_log_std
        self.zero_init_action_net = zero_init_action_net
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)  # type: ignore[call-arg]

    def make_features_extractor(self) -> BaseFeaturesExtractor:
        """SB3's, after :func:`check_nature_cnn_input` and :func:`check_extractor_reads_dict`."""
        policy = self.policy_alias or type(self).__name__
        check_nature_cnn_input(self.features_extractor_class, self.observation_space, policy)
        check_extractor_reads_dict(self.features_extractor_class, self.observation_space, policy)
        return super().make_features_extractor()  # type: ignore[misc]

    def _build(self, lr_schedule: Schedule) -> None:
        if self.critic == "none":  # SB3's constructor has resolved its default net_arch for the features extractor
            self.net_arch = actor_only_net_arch(self.net_arch)
        super()._build(lr_schedule)  # type: ignore[misc]
        if self.critic == "q":
            # SB3 built a scalar value layer: widen it to one output per action, initialized like SB3's (gain 1),
            # and rebuild the optimizer (still stateless) so that it holds the new layer.
            self.value_net = th.nn.Linear(self.mlp_extractor.latent_dim_vf, int(self.action_space.n))  # type: ignore[attr-defined]
            if self.ortho_init:
                self.init_weights(self.value_net, gain=1)  # type: ignore[attr-defined]
            self.optimizer = self.optimizer_class(  # type: ignore[call-arg]  # as SB3: torch types no lr
                self.parameters(),  # type: ignore[attr-defined]
                lr=lr_schedule(1),
                **self.optimizer_kwargs,
            )
        if self.zero_init_action_net:
            with th.no_grad():
                for param in self.action_net.parameters():
                    param.zero_()
        if not self.learn_log_std and isinstance(getattr(self, "log_std", None), th.nn.Parameter):
            # No gradient -> Adam and clip_grad_norm_ skip it: the noise level stays exactly log_std_init.
            self.log_std.requires_grad_(False)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """torch's ``load_state_dict``; ``ValueError`` naming the cause where only the critic's entries
        (:data:`CRITIC_PARAMETERS`) keep ``state_dict`` from loading and this policy's critic is not SB3's: SB3's
        ``set_parameters`` of an SB3 ``PPO`` (sb3-contrib ``RecurrentPPO``) model's parameters into a Q-critic policy
        (``critic="q"``) or an episodic recurrent one (no critic) failed inside torch on the value head's shape."""
        kind = getattr(self, "critic_kind", self.critic)  # the recurrent policies keep sb3-contrib's module as critic
        own = self.state_dict()  # type: ignore[attr-defined]
        misfits = [
            name
            for name, value in own.items()
            if name in state_dict and getattr(state_dict[name], "shape", None) != getattr(value, "shape", None)
        ]
        if strict:
            misfits += [name for name in own if name not in state_dict]
            misfits += [name for name in state_dict if name not in own]
        if kind in _CRITIC_LAYOUTS and misfits and all(name.startswith(CRITIC_PARAMETERS) for name in misfits):
            layout, fix = _CRITIC_LAYOUTS[kind]
            raise ValueError(
                f"these parameters' critic ({', '.join(misfits[:4])}) does not fit this {type(self).__name__}, which "
                f"has {layout}: they are an SB3 model's, with SB3's value function; {fix}"
            )
        return super().load_state_dict(state_dict, strict, assign)  # type: ignore[misc]

    def q_values(self, obs: PyTorchObs) -> tuple[th.Tensor, Distribution]:
        """``Q(s, .)`` ``[batch, |A|]`` and the action distribution ``pi(.|s)``, from one pass of the shared trunk.

        Only for ``critic="q"``.
        """
        if self.critic != "q":
            raise RuntimeError(f"q_values needs critic='q', this policy has critic={self.critic!r}")
        features = self.extract_features(obs)  # type: ignore[attr-defined]
        if self.share_features_extractor:
            latent_pi, latent_vf = self.mlp_extractor(features)
        else:
            pi_features, vf_features = features
            latent_pi = self.mlp_extractor.forward_actor(pi_features)
            latent_vf = self.mlp_extractor.forward_critic(vf_features)
        return self.value_net(latent_vf), self._get_action_dist_from_latent(latent_pi)  # type: ignore[attr-defined]

    @contextmanager
    def recording_q_values(self) -> Iterator[list[tuple[th.Tensor, th.Tensor]]]:
        """Within the block, every ``forward`` call appends its ``(Q(s, .), pi(.|s))`` to the yielded list.

        The Q-critic collector acts with ``forward`` once per step: recording its outputs spares a second pass of
        the network over the rollout to compute the advantages.
        """
        self._q_records = []
        try:
            yield self._q_records
        finally:
            self._q_records = None

    @staticmethod
    def _state_value(q: th.Tensor, distribution: Distribution) -> th.Tensor:
        """``V(s) = sum_a pi(a|s) Q(s, a)``, shape ``[batch, 1]``."""
        return (action_probs(distribution) * q).sum(dim=-1, keepdim=True)

    def forward(self, obs: th.Tensor, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Actions, values and log-likelihoods (SB3's contract); with a Q critic the values are ``V(s)``."""
        if self.critic != "q":
            return super().forward(obs, deterministic)  # type: ignore[misc]
        q, distribution = self.q_values(obs)
        if self._q_records is not None:
            self._q_records.append((q, action_probs(distribution)))
        actions = distribution.get_actions(deterministic=deterministic)
        log_prob = distribution.log_prob(actions)
        actions = actions.reshape((-1, *(self.action_space.shape or ())))  # Discrete: ()
        return actions, self._state_value(q, distribution), log_prob

    def predict_values(self, obs: PyTorchObs) -> th.Tensor:
        """State values ``[batch, 1]``; with a Q critic ``V(s) = sum_a pi(a|s) Q(s, a)`` (SB3 bootstraps with it)."""
        if self.critic != "q":
            return super().predict_values(obs)  # type: ignore[misc]
        return self._state_value(*self.q_values(obs))

    def evaluate_actions(self, obs: PyTorchObs, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        """Values, log-likelihood and entropy of ``actions`` (SB3's contract).

        Without a critic the values are zeros of shape ``(batch, 1)`` and the value branch is not run, so SB3's
        PPO update can be reused as is: its value loss is a constant 0 with no gradient. With a Q critic the values
        are ``Q(s, a)`` of the given actions, so PPO's value loss regresses them to the stored returns.
        """
        if self.critic == "q":
            q, distribution = self.q_values(obs)
            actions = actions.long().reshape(-1)
            q_taken = q.gather(-1, actions[:, None])
            return q_taken, distribution.log_prob(actions), distribution.entropy()
        if self.critic != "none":
            return super().evaluate_actions(obs, actions)  # type: ignore[misc]
        return evaluate_actions_without_value(self, obs, actions)  # type: ignore[arg-type]

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()  # type: ignore[misc]
        data.update(
            critic=self.critic,
            learn_log_std=self.learn_log_std,
            zero_init_action_net=self.zero_init_action_net,
        )
        return data


class OrderGradActorCriticPolicy(OrderGradPolicyMixin, ActorCriticPolicy):
    """SB3's ``ActorCriticPolicy`` (``"MlpPolicy"``) with the OrderGrad options of :class:`OrderGradPolicyMixin`."""

    policy_alias = "MlpPolicy"


class OrderGradActorCriticCnnPolicy(OrderGradPolicyMixin, ActorCriticCnnPolicy):
    """SB3's ``ActorCriticCnnPolicy`` (``"CnnPolicy"``) with the OrderGrad options of :class:`OrderGradPolicyMixin`."""

    policy_alias = "CnnPolicy"


class OrderGradMultiInputPolicy(OrderGradPolicyMixin, MultiInputActorCriticPolicy):
    """SB3's ``MultiInputActorCriticPolicy`` (``"MultiInputPolicy"``) with the OrderGrad options."""

    policy_alias = "MultiInputPolicy"


MlpPolicy = OrderGradActorCriticPolicy
CnnPolicy = OrderGradActorCriticCnnPolicy
MultiInputPolicy = OrderGradMultiInputPolicy

#: SB3's type of ``policy_aliases`` (a ``ClassVar`` of its algorithms).
POLICY_ALIASES: dict[str, type[BasePolicy]] = {
    "MlpPolicy": OrderGradActorCriticPolicy,
    "CnnPolicy": OrderGradActorCriticCnnPolicy,
    "MultiInputPolicy": OrderGradMultiInputPolicy,
}
