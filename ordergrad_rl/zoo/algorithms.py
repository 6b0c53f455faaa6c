"""The algorithms the zoo trains (``--algo``) and the checks of their hyperparameters.

A hyperparameter given as text (``--hparams key=value``) or in a file (per-env YAML, sweep configs) is checked
against the constructor's signature here, before any model is built: an unknown key, one that has its own option,
or a value of the wrong type is a :class:`~ordergrad_rl.common.errors.CommandError` naming where it was written.
"""

from __future__ import annotations

import ast
import collections.abc
import importlib
import inspect
import math
import sys
import types
import typing
from typing import TYPE_CHECKING, Any, TypeAlias

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.options import closest_argument

if TYPE_CHECKING:
    from stable_baselines3.common.utils import LinearSchedule

    from ordergrad_rl.agents import OrderGradMaskablePPO, OrderGradPPO, OrderGradRecurrentPPO, OrderGradREINFORCE

    #: The class of an ``--algo`` (:data:`ALGOS`).
    AlgorithmClass: TypeAlias = type[OrderGradPPO | OrderGradREINFORCE | OrderGradRecurrentPPO | OrderGradMaskablePPO]

ALGOS: dict[str, str] = {
    "ppo": "OrderGradPPO",
    "reinforce": "OrderGradREINFORCE",
    "recurrent_ppo": "OrderGradRecurrentPPO",
    "maskable_ppo": "OrderGradMaskablePPO",
}
#: rl-zoo3's names of :data:`ALGOS`' keys (its ``--algo ppo_lstm`` is sb3-contrib's RecurrentPPO).
RL_ZOO_ALGOS: dict[str, str] = {"ppo_lstm": "recurrent_ppo"}


def algo_name(text: str) -> str:
    """argparse type of ``--algo``: a key of :data:`ALGOS`, or rl-zoo3's name of one (:data:`RL_ZOO_ALGOS`), which
    argparse's ``choices`` then check."""
    return RL_ZOO_ALGOS.get(text, text)


#: Constructor arguments that have their own option.
OPTION_OF: dict[str, str] = {
    "policy": "--policy",
    "env": "--env",
    "objective": "--objective",
    "k": "--k",
    "n_episodes": "--n-episodes",
    "n_envs": "--n-envs",
    "seed": "--seed",
    "tensorboard_log": "--tensorboard",
    "verbose": "--verbose",
    "device": "--device",
}


#: Options a per-env hyperparameter file may also set, as rl-zoo3's entries set their rollout size and number of
#: envs (the option wins; ``n_timesteps`` and ``policy`` are read by :mod:`ordergrad_rl.zoo.hyperparams`).
ENTRY_OPTIONS = ("n_episodes", "n_envs")

#: Keys of rl-zoo3's entries that are not constructor arguments: refused as hyperparameters. ``env_kwargs``,
#: ``env_wrapper``, ``vec_env_wrapper``, ``frame_stack``, ``callback`` and ``normalize`` are read from a per-env file
#: entry (:mod:`ordergrad_rl.zoo.hyperparams`), the others nowhere.
RL_ZOO_ONLY_KEYS = (
    "callback",
    "env_kwargs",
    "env_wrapper",
    "frame_stack",
    "normalize",
    "normalize_kwargs",
    "vec_env_wrapper",
)
#: Those of :data:`RL_ZOO_ONLY_KEYS` that a per-env file entry gives, with where to write them instead.
ENTRY_ONLY_KEYS = {
    "env_kwargs": "give the env's arguments with train --env-kwargs",
    "env_wrapper": "write it in the env's entry of a --conf-file (rl-zoo3's env_wrapper: a wrapper's dotted path, "
    "or a list of them)",
    "normalize": "write it in the env's entry of a --conf-file (rl-zoo3's normalize: true, or a mapping of "
    "VecNormalize's arguments)",
    "normalize_kwargs": "give VecNormalize's arguments as the normalize mapping of the env's --conf-file entry",
    "frame_stack": "write it in the env's entry of a --conf-file (rl-zoo3's frame_stack: the number of frames "
    "VecFrameStack stacks)",
    "vec_env_wrapper": "write it in the env's entry of a --conf-file (rl-zoo3's vec_env_wrapper: a VecEnvWrapper's "
    "dotted path, or a list of them)",
    "callback": "write it in the env's entry of a --conf-file (rl-zoo3's callback: an SB3 callback's dotted path, or "
    "a list of them)",
}


def algorithm_class(algo: str) -> AlgorithmClass:
    """The algorithm class of ``--algo`` (see :data:`ALGOS`).

    The agents (torch, SB3) are imported on first use, not with this module: the command-line parser imports the
    registry for ``--algo``'s choices, and ``ordergrad-rl train --help`` stays fast.
    """
    return getattr(importlib.import_module("ordergrad_rl.agents"), ALGOS[algo])


def check_policy_name(cls: type, policy: Any, where: str) -> None:
    """:raises CommandError: a policy name that is not one of ``cls``'s (``policy_aliases``), naming ``where`` it
    came from (``--policy``, an entry's ``policy``, a sweep key), the closest name and all of them; SB3's constructor
    said only "Policy Foo unknown". A policy class is left to the algorithm."""
    names = list(cls.policy_aliases)  # type: ignore[attr-defined]
    if isinstance(policy, str) and policy not in names:
        raise CommandError(
            f"{where}: {cls.__name__} has no policy {policy!r}{closest_argument(policy, names)}; its policies: "
            f"{', '.join(names)}"
        )


def hyperparameter_names(cls: type) -> list[str]:
    """Constructor arguments of ``cls`` that ``--hparams`` may set: not those with their own option, nor those it
    refuses (:func:`refused_arguments`)."""
    names = set(inspect.signature(cls).parameters) - refused_arguments(cls)
    return sorted(name for name in names if name not in OPTION_OF and not name.startswith("_"))


def refused_arguments(cls: type) -> set[str]:
    """Constructor arguments of ``cls`` typed ``None``: its SB3 parent's that it has no use for (OrderGradREINFORCE's
    ``n_steps``, ``gae_lambda``, ``vf_coef`` ...), which its constructor refuses saying what to set instead."""
    parameters = inspect.signature(cls).parameters
    return {name for name, parameter in parameters.items() if parameter.annotation in (None, "None")}


def _annotation(cls: type, name: str) -> Any:
    """The evaluated annotation of constructor argument ``name``, or ``None`` if it has none or cannot be evaluated.

    Annotations are evaluated one by one: ``typing.get_type_hints`` fails as a whole on names imported under
    ``TYPE_CHECKING`` (``VecEnv`` in SB3's signatures).
    """
    annotation = inspect.signature(cls).parameters[name].annotation
    if annotation is inspect.Parameter.empty:
        return None
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, vars(sys.modules[cls.__module__]), {})  # the class's own source text, not user input
    except Exception:
        return None


def _is_callable(annotation: Any) -> bool:
    """Whether ``annotation`` is ``Callable`` or ``Callable[...]`` (SB3's ``Schedule``), not a union holding one."""
    return annotation is collections.abc.Callable or typing.get_origin(annotation) is collections.abc.Callable


def _matches(value: Any, annotation: Any) -> bool:
    """Whether ``value`` (a Python literal) fits ``annotation``; unknown annotations accept anything.

    Shallow: ``dict[str, Any]`` checks that ``value`` is a dict. A literal is never a class or a callable, so
    ``type[...]`` and ``Callable`` (SB3's ``Schedule``) refuse it. ``int`` fits ``float`` (PEP 484), ``bool`` fits
    only ``bool``.
    """
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(annotation))
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if origin is type or _is_callable(annotation):
        return False
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(origin, type):
        return isinstance(value, origin)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True


_LITERAL_KINDS: dict[Any, str] = {
    float: "a number",
    int: "an integer",
    bool: "True or False",
    str: "a string",
    type(None): "None",
    dict: "a dict such as {'key': 1}",
    list: "a list",
    tuple: "a tuple",
}


def _describe(annotation: Any) -> str:
    """What a command-line literal must be to fit ``annotation``, in words (``""`` for classes and functions)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(part for part in map(_describe, typing.get_args(annotation)) if part)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(annotation))
    if origin is type or _is_callable(annotation):
        return ""
    return _LITERAL_KINDS.get(origin or annotation, str(annotation))


def _expected(cls: type, name: str) -> Any:
    """What ``name`` accepts: its annotation, else the type of its default (``None``: anything)."""
    annotation = _annotation(cls, name)
    if annotation is not None:
        return annotation
    default = inspect.signature(cls).parameters[name].default
    return None if default is None or default is inspect.Parameter.empty else type(default)


def parse_hparams(items: list[str], cls: type) -> dict[str, Any]:
    """``["key=value", ...]`` -> ``{key: ast.literal_eval(value)}`` (the raw string if it is not a literal).

    Each value must fit the constructor argument's annotation (or its default's type, when unannotated), so
    ``learning_rate=1e-2x`` (a string, not a number) is refused here rather than deep inside the algorithm.

    :raises CommandError: malformed item, a key with its own option, a key ``cls`` does not accept, or a value of
        the wrong type.
    """
    from ordergrad_rl.common.options import key_value_items

    out: dict[str, Any] = {}
    for key, value, text in key_value_items(items, "--hparams"):  # text: e.g. activation names, device strings
        out[key] = check_hparam(key, value, cls, f"--hparams {key}={text}", raw=value is text)
    return out


#: rl-zoo3's notation for a schedule decayed linearly to 0 over training: ``lin_3e-4`` (``learning_rate``,
#: ``clip_range``, ``ent_coef`` of the episodic agents: any argument that takes a schedule).
LINEAR_PREFIX = "lin_"


def _accepts_schedule(annotation: Any) -> bool:
    """Whether ``annotation`` admits a callable (SB3's ``Schedule``)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_accepts_schedule(arg) for arg in typing.get_args(annotation))
    return _is_callable(annotation)


def linear_schedule(text: str, where: str) -> LinearSchedule:
    """``lin_<x>`` -> SB3's schedule from ``x`` at the start of training to 0 at its end (rl-zoo3's notation).

    :raises CommandError: what follows ``lin_`` is not a finite number.
    """
    try:
        start = float(text[len(LINEAR_PREFIX) :])
    except ValueError:
        start = float("nan")
    if not math.isfinite(start):
        raise CommandError(f"{where}: {text!r} is not a linear schedule: write {LINEAR_PREFIX}<number>, e.g. lin_3e-4")
    from stable_baselines3.common.utils import LinearSchedule  # here: SB3 pulls in torch (see algorithm_class)

    return LinearSchedule(start, 0.0, 1.0)


def number(value: Any) -> Any:
    """``value``, with text that is a Python number literal (``"3e-4"``, which YAML 1.1 reads as a string) as
    the number."""
    if isinstance(value, str):
        try:
            literal = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, TypeError):  # TypeError: an unhashable key ("{[8]: 1}")
            return value
        if isinstance(literal, (int, float)) and not isinstance(literal, bool):
            return literal
    return value


#: Arguments that rl-zoo3's files write as the text of a Python dict (``policy_kwargs: "dict(net_arch=[64, 64])"``).
TEXT_MAPPINGS = ("policy_kwargs",)


#: Classes that the text of ``policy_kwargs`` may name, and their modules: ordergrad-rl's features extractor for small
#: grids (``features_extractor_class=GridCNN``, MinAtar's trunk in ``reproduce minatar``).
TEXT_CLASSES: dict[str, str] = {"GridCNN": "ordergrad_rl.agents"}


def python_text(text: str) -> Any:
    """The Python value of ``text`` as rl-zoo3's files write ``policy_kwargs`` and ``normalize``: literals,
    ``dict(key=value, ...)`` (nested too), torch's ``nn.<Module>`` classes (``activation_fn=nn.ReLU``) and the classes
    of :data:`TEXT_CLASSES` (``features_extractor_class=GridCNN``). Read, not run as code as rl-zoo3's ``eval`` does.

    :raises ValueError: text that is not such a value; the message describes it (``text that is not a Python value
        (...)``, ``'RMSpropTFLike' in '...'``), to follow "got" in the caller's.
    """

    def read(node: ast.expr) -> Any:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            if not node.args and all(keyword.arg is not None for keyword in node.keywords):
                return {keyword.arg: read(keyword.value) for keyword in node.keywords}
        elif isinstance(node, ast.Dict):
            keys = [key for key in node.keys if key is not None]  # None: a ``**mapping``, which literal_eval refuses
            if len(keys) == len(node.keys):
                return {read(key): read(value) for key, value in zip(keys, node.values, strict=True)}
        elif isinstance(node, (ast.List, ast.Tuple)):
            items = [read(item) for item in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "nn":
            from torch import nn  # here: only for the text that names one

            module = getattr(nn, node.attr, None)
            if isinstance(module, type) and issubclass(module, nn.Module):
                return module
        elif isinstance(node, ast.Name) and node.id in TEXT_CLASSES:
            return getattr(importlib.import_module(TEXT_CLASSES[node.id]), node.id)
        try:
            return ast.literal_eval(node)
        except ValueError:
            raise ValueError(
                f"{ast.get_source_segment(text, node)!r} in {text!r}, which is not a Python literal, "
                f"dict(key=value, ...), torch class nn.<Name> (nn.ReLU) or {' or '.join(TEXT_CLASSES)}"
            ) from None

    text = text.strip()
    try:
        return read(ast.parse(text, mode="eval").body)
    except SyntaxError as err:
        raise ValueError(f"text that is not a Python value ({err.msg})") from err
    except TypeError as err:  # a dict key that is a list or a dict
        raise ValueError(f"text that is not a Python value ({err})") from err


def check_hparam(key: str, value: Any, cls: type, where: str, raw: bool = False, options: tuple[str, ...] = ()) -> Any:
    """``value`` if ``cls`` accepts ``key`` (not one with its own option) with a value of that type; text
    ``lin_<x>`` for an argument that takes a schedule is that schedule (:func:`linear_schedule`), and the text of a
    ``policy_kwargs`` is its dict (:func:`python_text`, rl-zoo3's ``"dict(net_arch=[64, 64])"``).

    :param where: how the user wrote it, for the message (``--hparams lr=x``, ``sweep.yaml: learning_rate``).
    :param raw: ``value`` is command-line text that is not a Python literal (said so in the message).
    :param options: keys with their own option that are accepted here too (:data:`ENTRY_OPTIONS` in a file, a
        sweep's trial keys), listed with the valid keys.
    :raises CommandError: a key with its own option, a key ``cls`` does not accept, or a value of the wrong type.
    """
    if key in OPTION_OF and key not in options:
        raise CommandError(f"{where}: set {key} with {OPTION_OF[key]}")
    if key in RL_ZOO_ONLY_KEYS:
        if key in ENTRY_ONLY_KEYS:
            raise CommandError(f"{where}: rl-zoo3's {key} is not a hyperparameter; {ENTRY_ONLY_KEYS[key]}")
        raise CommandError(f"{where}: rl-zoo3's {key} is not supported by ordergrad-rl; remove it")
    valid = [*hyperparameter_names(cls), *options]
    if key not in valid and key not in refused_arguments(cls):  # those the constructor refuses, with its reason
        hint = closest_argument(key, valid)  # "seeds" in a sweep: seed, one of its options
        raise CommandError(
            f"{where}: {cls.__name__} has no hyperparameter {key!r}{hint}; valid keys: {', '.join(valid)}"
        )
    expected = _expected(cls, key)
    if isinstance(value, str) and key in TEXT_MAPPINGS:  # rl-zoo3's "dict(net_arch=[64, 64], activation_fn=nn.ReLU)"
        try:
            value, raw = python_text(value), False
        except ValueError as err:
            raise CommandError(f"{where}: {cls.__name__}'s {key} expects {_describe(expected)}, got {err}") from err
    if isinstance(value, str) and value.startswith(LINEAR_PREFIX) and _accepts_schedule(expected):
        return linear_schedule(value, where)
    if expected is not None and not _matches(value, expected):
        got = "text that is not a Python literal" if raw else f"{type(value).__name__} {value!r}"
        accepted = _describe(expected) or "a class or function (cannot be given on the command line)"
        raise CommandError(f"{where}: {cls.__name__}'s {key} expects {accepted}, got {got}")
    return value
