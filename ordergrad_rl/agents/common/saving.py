"""Saved OrderGrad models: which algorithm wrote a file, and the checks made before SB3's ``load`` restores it.

SB3's ``load`` restores whatever attributes a zip holds into whichever class it is called on, and skips (with a
warning) the ones it cannot deserialize. For an OrderGrad agent that could silently give a model with another
algorithm's settings or with the default objective instead of the trained one, so the agents read the zip's raw
``data`` first (:func:`check_saved_algorithm`) and save their objective as its canonical spec string
(``objective_spec``), which is parsed again, strictly, when the model is set up.
"""

from __future__ import annotations

import io
import json
import pathlib
import zipfile
from typing import Any

from stable_baselines3.common.save_util import open_path


def read_saved_data(path: str | pathlib.Path | io.BufferedIOBase) -> dict[str, Any]:
    """The ``data`` entry of a zip written by SB3's ``model.save``, as raw JSON (nothing unpickled).

    A file object is read from its current position and left there.

    :raises ValueError: not a zip with a JSON ``data`` entry.
    """
    file = open_path(path, "r", verbose=0, suffix="zip")
    start = file.tell()
    try:
        with zipfile.ZipFile(file) as archive:
            return json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as err:
        # "wasn't a zip-file" is SB3's own wording for the same error (its load raises it).
        kind = "wasn't a zip-file" if isinstance(err, zipfile.BadZipFile) else "has no valid model data"
        raise ValueError(f"{path} {kind}: not a model saved by Stable-Baselines3's model.save ({err})") from err
    finally:
        if isinstance(path, str | pathlib.Path):
            file.close()
        else:
            file.seek(start)


def algorithm_family(cls: type) -> str:
    """The name of the ordergrad-rl algorithm ``cls`` is (or derives from): ``"OrderGradPPO"`` for OrderGradPPO
    and users' subclasses of it; a class's ``saved_as`` if it sets one (``OrderGradQCriticPPO`` saves as
    ``"OrderGradPPO"``, the file format of release 0.1.0, where it was a mode of that class)."""
    saved_as = getattr(cls, "saved_as", None)
    if saved_as is not None:
        return str(saved_as)
    for base in cls.__mro__:
        if base.__module__.startswith("ordergrad_rl."):
            return base.__name__
    raise TypeError(f"{cls.__name__} is not an ordergrad-rl algorithm")


def sb3_algorithm_name(cls: type) -> str:
    """The SB3 or sb3-contrib algorithm that ``cls`` extends, as users import it: ``"sb3_contrib.RecurrentPPO"`` for
    OrderGradRecurrentPPO; SB3's ``"stable_baselines3.PPO"`` for one on SB3's common base alone
    (OrderGradREINFORCE)."""
    for base in cls.__mro__:
        package, _, module = base.__module__.partition(".")
        if package in ("stable_baselines3", "sb3_contrib") and not module.startswith("common"):
            return f"{package}.{base.__name__}"
    return "stable_baselines3.PPO"


def saved_algorithm(data: dict[str, Any]) -> str | None:
    """The ordergrad-rl algorithm that wrote ``data`` (see :func:`read_saved_data`), or ``None`` for another one.

    Files written before the name was recorded are told apart by what they hold: an objective, and PPO's
    ``n_epochs`` or not.
    """
    if "ordergrad_algorithm" in data:
        return str(data["ordergrad_algorithm"])
    if "objective" not in data and "objective_spec" not in data:
        return None
    return "OrderGradPPO" if "n_epochs" in data else "OrderGradREINFORCE"


#: The ``data`` key under which an episodic agent's save records the ``VecNormalize`` its env was wrapped in.
VEC_NORMALIZE = "vec_normalize"


def saved_vec_normalize(data: dict[str, Any]) -> dict[str, bool] | None:
    """The ``VecNormalize`` whose statistics the model that wrote ``data`` (see :func:`read_saved_data`) acts on:
    ``{"norm_obs": ..., "norm_reward": ...}``, or ``None`` for a model saved without one (or by an algorithm that
    does not record it: SB3's own, ordergrad-rl's before 2026-12-06)."""
    record = data.get(VEC_NORMALIZE)
    return dict(record) if isinstance(record, dict) else None


def check_saved_algorithm(path: Any, cls: type) -> None:
    """``ValueError`` unless the model at ``path`` was saved by ``cls``'s algorithm (:func:`algorithm_family`).

    :param path: what SB3's ``load`` accepts: a path (with or without ``.zip``) or a file object.
    """
    family = algorithm_family(cls)
    saved = saved_algorithm(read_saved_data(path))
    if saved is None:
        raise ValueError(
            f"{path} was not saved by an OrderGrad algorithm (it has no objective): load it with the class that "
            f"saved it (e.g. {sb3_algorithm_name(cls)}.load), or start from its policy with "
            f"{family}.from_sb3(path, env)"
        )
    if saved != family:
        raise ValueError(f"{path} was saved by {saved}, not {family}: load it with {saved}.load")
