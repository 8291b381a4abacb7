"""A saved model read without running any of its code.

An SB3 zip holds ``policy.pth`` (the weights, a torch file) and ``data`` (JSON whose spaces,
policy class and schedules are cloudpickled Python objects: unpickling them runs whatever code
the file's author put there). ``schedgym train`` therefore also records, in plain JSON, what is
needed to rebuild the policy: the :data:`ENTRY` file inside the zip (so a copied zip carries
it; SB3 and rl_zoo3 ignore it, and anyone can read it with ``unzip -p model.zip
schedgym.json``) and the same keys in the run folder's ``run.json``:

- ``policy``: :func:`policy_record` of the trained policy: its class (qualified name), its
  observation and action spaces (:func:`encode_space`) and its constructor keyword arguments
  (classes by qualified name, :func:`encode_value`);
- ``play``: how the model was meant to be played, ``"mode"`` (the policy's deterministic
  action) or ``"sampled"`` (its drawn actions), as chosen at training (:data:`PLAYS`);
- ``env_id`` and ``env_kwargs`` (the mode keys the model plays in).

:func:`build_policy` rebuilds the policy from that record and loads ``policy.pth`` with
``torch.load(weights_only=True)``, which reads tensors only and refuses any other object. A
recorded class is resolved only inside :data:`TRUSTED_MODULES` (installed library code), so a
record cannot name arbitrary code either.
"""

from __future__ import annotations

import importlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

#: The file inside a model zip holding schedgym's plain-JSON record of the model.
ENTRY = "schedgym.json"
#: How a model is played: its policy's mode (deterministic) or its sampled actions.
PLAYS = ("mode", "sampled")
#: Module prefixes a recorded class may come from (installed library code, never the file's).
TRUSTED_MODULES = ("stable_baselines3", "torch.nn", "torch.optim", "schedgym.train.policies")
#: Constructor arguments of an SB3 policy that are not recorded (the spaces are recorded apart;
#: the schedule only sets the optimizer's learning rate, which playing never uses).
_NOT_RECORDED = ("observation_space", "action_space", "lr_schedule")


class UnrecordedValue(ValueError):
    """A value :func:`encode_value` or :func:`encode_space` cannot write as plain JSON."""


def encode_space(space: spaces.Space) -> dict[str, Any]:
    """A gymnasium space as plain JSON (``Box``, ``Dict``, ``MultiBinary``, ``Discrete``,
    ``MultiDiscrete``); :class:`UnrecordedValue` for any other space."""
    if isinstance(space, spaces.Box):
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "low": _array(space.low), "high": _array(space.high)}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: encode_space(s) for k, s in space.spaces.items()}}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": space.nvec.tolist()}
    raise UnrecordedValue(f"space {space} has no plain-JSON record")


def _array(a: np.ndarray) -> Any:
    """One number when every entry is the same, else the nested list (inf as a string)."""
    flat = np.asarray(a, dtype=np.float64).ravel()
    if flat.size and np.all(flat == flat[0]):
        return _number(float(flat[0]))
    return [_number(float(x)) for x in flat]


def _number(x: float) -> Any:
    return x if np.isfinite(x) else ("inf" if x > 0 else "-inf")


def _bound(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A Box bound of :func:`_array` back as an array of ``shape``."""
    if isinstance(value, list):
        return np.array([float(x) for x in value], dtype=np.float64).reshape(shape)
    return np.full(shape, float(value))


def decode_space(record: Any) -> spaces.Space:
    """The space :func:`encode_space` wrote; ``ValueError`` for anything else."""
    if not isinstance(record, dict):
        raise ValueError(f"a space record must be a JSON object, not {record!r}")
    kind = record.get("type")
    if kind == "Box":
        shape = tuple(int(n) for n in record["shape"])
        dtype = np.dtype(str(record["dtype"]))
        low, high = (_bound(record[k], shape) for k in ("low", "high"))
        return spaces.Box(low.astype(dtype), high.astype(dtype), shape, dtype)
    if kind == "Dict":
        return spaces.Dict({str(k): decode_space(v) for k, v in record["spaces"].items()})
    if kind == "MultiBinary":
        return spaces.MultiBinary(record["n"])
    if kind == "Discrete":
        return spaces.Discrete(int(record["n"]), start=int(record.get("start", 0)))
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(record["nvec"])
    raise ValueError(f"space type {kind!r} is not recorded by schedgym")


def encode_value(value: Any) -> Any:
    """A policy constructor argument as plain JSON: numbers, text, lists, dicts; a class as
    ``{"class": "module.QualName"}``; :class:`UnrecordedValue` for anything else."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode_value(v) for k, v in value.items()}
    if isinstance(value, type):
        return {"class": f"{value.__module__}.{value.__qualname__}"}
    raise UnrecordedValue(f"{value!r} has no plain-JSON record")


def decode_value(value: Any) -> Any:
    """The argument :func:`encode_value` wrote (classes resolved by :func:`resolve_class`)."""
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"class"}:
            return resolve_class(value["class"])
        return {k: decode_value(v) for k, v in value.items()}
    return value


def resolve_class(name: Any) -> type:
    """The class of the qualified ``name``, looked up only in modules of
    :data:`TRUSTED_MODULES` (``ValueError`` otherwise: a record cannot make schedgym import any
    other code)."""
    parts = name.split(".") if isinstance(name, str) else []
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if not any(module == m or module.startswith(m + ".") for m in TRUSTED_MODULES):
            continue
        try:
            obj: Any = importlib.import_module(module)
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
        if isinstance(obj, type):
            return obj
    raise ValueError(f"class {name!r} is not one schedgym rebuilds (only classes of "
                     f"{', '.join(TRUSTED_MODULES)})")


def policy_record(policy: Any) -> dict[str, Any] | None:
    """The plain-JSON record that rebuilds ``policy`` (an SB3 policy): its class, spaces and
    constructor arguments; None when one of them has no plain-JSON form."""
    try:
        params = policy._get_constructor_parameters()
        kwargs = {k: encode_value(v) for k, v in params.items() if k not in _NOT_RECORDED}
        cls = type(policy)
        return {"class": f"{cls.__module__}.{cls.__qualname__}",
                "observation_space": encode_space(policy.observation_space),
                "action_space": encode_space(policy.action_space), "kwargs": kwargs}
    except UnrecordedValue:
        return None


def read_entry(path: str | Path) -> dict[str, Any] | None:
    """The :data:`ENTRY` record inside the zip at ``path``; None when it has none or it is no
    JSON object. ``ValueError`` naming the file when the file is not a readable zip."""
    with open_zip(path) as zf:
        if ENTRY not in zf.namelist():
            return None
        try:
            record = json.loads(_read(zf, ENTRY, path))
        except ValueError:
            return None
    return record if isinstance(record, dict) else None


def open_zip(path: str | Path) -> zipfile.ZipFile:
    """The zip at ``path``, opened; ``ValueError`` naming the file when it is no zip."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ValueError(f"{path} is damaged or not a model zip ({exc}): train it again or "
                         "restore it from a copy") from None


def check_zip(path: str | Path) -> None:
    """Read every entry of the zip at ``path`` and check its CRC: ``ValueError`` in one line
    naming the file and the damaged entry (rather than SB3's "wasn't a zip-file" or a CRC
    traceback half-way through a load)."""
    with open_zip(path) as zf:
        for info in zf.infolist():
            _read(zf, info.filename, path)


def _read(zf: zipfile.ZipFile, name: str, path: str | Path) -> bytes:
    try:
        return zf.read(name)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:  # bad CRC, truncated
        raise ValueError(f"{path} is damaged: its {name} does not read back ({exc}): train it "
                         "again or restore it from a copy") from None


def read_weights(path: str | Path) -> dict[str, Any]:
    """The policy's weights (``policy.pth`` of the zip), read with
    ``torch.load(weights_only=True)``: tensors only, any other object is refused."""
    import torch

    with open_zip(path) as zf:
        if "policy.pth" not in zf.namelist():
            raise ValueError(f"{path} has no policy.pth: not a Stable-Baselines3 model zip")
        raw = _read(zf, "policy.pth", path)
    try:
        state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle.UnpicklingError and the like: not plain weights
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{path}: its policy.pth is not plain weights, so it is not loaded "
                         f"(it would need unpickling: {first})") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path}: its policy.pth is not a state dict of weights")
    return state


def build_policy(record: dict[str, Any], path: str | Path,
                 observation_space: spaces.Space | None = None,
                 action_space: spaces.Space | None = None) -> Any:
    """The policy of ``record`` (:func:`policy_record`) with the weights of the zip at
    ``path`` (:func:`read_weights`), in evaluation mode on the CPU. ``observation_space`` /
    ``action_space`` replace the recorded ones (a shared-weights policy on another size)."""
    from stable_baselines3.common.policies import BasePolicy

    cls = resolve_class(record.get("class"))
    if not issubclass(cls, BasePolicy):
        raise ValueError(f"class {record.get('class')!r} is not an SB3 policy")
    obs = observation_space or decode_space(record["observation_space"])
    act = action_space or decode_space(record["action_space"])
    kwargs = decode_value(record.get("kwargs") or {})
    policy = cls(obs, act, lambda _: 0.0, **kwargs)
    try:
        policy.load_state_dict(read_weights(path))
    except RuntimeError as exc:  # the weights' shapes are not the record's
        raise ValueError(f"{path}: its weights do not fit the recorded policy "
                         f"({str(exc).splitlines()[0]})") from None
    policy.set_training_mode(False)
    return policy.to("cpu")
