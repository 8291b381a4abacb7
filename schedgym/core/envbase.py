"""Plumbing shared by every schedgym environment: action boxes, action validation, seeding,
render-mode checks and how the instance is obtained (explicit, scenario builder, generator)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import gymnasium as gym
import numba
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from schedgym.core import rng as rngs
from schedgym.core.scenarios import ScenarioRegistry
from schedgym.core.validation import check_choice, check_seed


def unit_box(n: int) -> spaces.Box:
    """The continuous action space of every env: ``Box(-1, 1, (n,), float32)``."""
    return spaces.Box(-1.0, 1.0, shape=(n,), dtype=np.float32)


def frac_box(n: int, high: float = 1.0) -> spaces.Box:
    """A 1-D float32 observation box ``[0, high]^n``."""
    return spaces.Box(0.0, high, shape=(n,), dtype=np.float32)


def as_action(action: Any, size: int, name: str = "action") -> np.ndarray:
    """Return ``action`` as a float64 vector of length ``size`` without the finiteness check
    (for callers that check it inside a compiled kernel and raise :func:`nonfinite_action`).

    A non-numeric input or a shape other than ``(size,)`` raises ``ValueError`` naming both.
    """
    try:
        arr = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} is invalid: expected a numeric array of shape ({size},), got "
            f"{type(action).__name__}"
        ) from None
    if arr.shape != (size,):
        raise ValueError(f"{name} has shape {arr.shape}: must have shape ({size},)")
    return arr


def first_nonfinite_index(arr: np.ndarray) -> int:
    """Flat index of the first NaN/inf entry of ``arr``, or -1 when every entry is finite."""
    bad = np.flatnonzero(~np.isfinite(np.ravel(arr)))
    return int(bad[0]) if bad.size else -1


def nonfinite_action(arr: np.ndarray, bad: int, name: str = "action") -> ValueError:
    """The ``ValueError`` for a non-finite entry ``arr[bad]`` (returned, the caller raises)."""
    return ValueError(
        f"{name} contains a non-finite entry (index {bad}: {arr[bad]!r}): every entry must "
        "be finite"
    )


def validate_action(action: Any, size: int, name: str = "action") -> np.ndarray:
    """Return ``action`` as a float64 vector of length ``size``; raise on wrong shape or NaN/inf.

    A shape other than ``(size,)`` raises ``ValueError`` naming both shapes.
    """
    arr = as_action(action, size, name)
    if not (np.isfinite(arr.min()) and np.isfinite(arr.max())):  # NaN/inf propagate to min/max
        raise nonfinite_action(arr, first_nonfinite_index(arr), name)
    return arr


def clip_unit(action: np.ndarray) -> tuple[np.ndarray, float]:
    """Clip to [-1, 1] (the documented treatment of out-of-box actions); returns the amount moved
    (max absolute change)."""
    if action.size == 0 or (action.min() >= -1.0 and action.max() <= 1.0):
        return action, 0.0
    clipped = np.clip(action, -1.0, 1.0)
    return clipped, float(np.max(np.abs(clipped - action)))


def decode_unit(action: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Affine map ``[-1, 1] -> [0, upper]`` entrywise."""
    return (np.asarray(action, dtype=np.float64) + 1.0) * 0.5 * upper


@numba.njit(cache=True)
def encode_flat(value: np.ndarray, upper: np.ndarray, out: np.ndarray) -> None:
    """:func:`encode_unit` into a preallocated ``out`` (float32): flat arrays of one length,
    ``value`` and ``upper`` float64 (no conversion, for callers on a hot path)."""
    for i in range(value.size):
        u = upper[i]
        a = 2.0 * value[i] / u - 1.0 if u > 0 else -1.0
        out[i] = a if a != a else min(max(a, -1.0), 1.0)  # NaN stays NaN, as np.clip


def encode_unit(value: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Inverse of :func:`decode_unit` (entries with ``upper == 0`` map to -1), float32 in
    [-1, 1]: ``clip(2 value / upper - 1, -1, 1)``; ``value`` and ``upper`` broadcast."""
    v = np.asarray(value, dtype=np.float64)
    u = np.asarray(upper, dtype=np.float64)
    if v.shape != u.shape:
        v, u = np.broadcast_arrays(v, u)
    out = np.empty(v.shape, dtype=np.float32)
    encode_flat(np.ascontiguousarray(v).reshape(-1), np.ascontiguousarray(u).reshape(-1),
                 out.reshape(-1))
    return out


def resolve_episode_seed(seed: int | None, np_random: np.random.Generator) -> int:
    """The integer seed of the episode's exogenous streams: ``seed`` itself, or a fresh draw from
    the env's ``np_random`` when ``reset(seed=None)``."""
    return int(seed) if seed is not None else rngs.episode_seed(np_random)


def check_render_mode(render_mode: str | None, modes: list[str]) -> str | None:
    """``render_mode`` if it is ``None`` or one of the env's ``metadata["render_modes"]``."""
    if render_mode is not None:
        check_choice("render_mode", render_mode, modes)
    return render_mode


def resolve_instance(
    registry: ScenarioRegistry,
    scenario: str,
    overrides: dict[str, Any],
    instance_seed: int,
    instance: Any,
    instance_type: type,
    generate: Callable[[dict[str, Any], int], Any],
) -> tuple[Any, dict[str, Any], Any, str]:
    """The instance an env is built on, in the order every schedgym env uses.

    1. an explicit ``instance`` (type-checked against ``instance_type``);
    2. else the scenario's *builder* (trace-driven scenarios): ``builder(params,
       instance_seed)`` returns the instance or ``(instance, exogenous sampler)``; the
       scenario-only parameters are then dropped from the returned ``params``;
    3. else ``generate(params, instance_seed)``, the problem's synthetic generator.

    Returns ``(instance, params, sampler or None, source)`` with ``source`` one of
    ``"instance"``, ``"builder"``, ``"generator"``; ``params`` are the scenario's parameters with
    the overrides applied (the env validates them against the instance's sizes).
    """
    sc, params = registry.resolve(scenario, overrides)
    if instance is not None:
        if not isinstance(instance, instance_type):
            raise ValueError(
                f"instance is invalid: must be a {instance_type.__name__}, got "
                f"{type(instance).__name__}"
            )
        return instance, params, None, "instance"
    if sc.builder is not None:
        built = sc.builder(params, instance_seed)
        inst, sampler = built if isinstance(built, tuple) else (built, None)
        return inst, {k: v for k, v in params.items() if k in registry.defaults}, sampler, \
            "builder"
    return generate(params, instance_seed), params, None, "generator"


class Viewer(Protocol):
    """What an env's ``viewer`` module provides: both renderers read only a small snapshot of the
    env (its ``render_state()``), never the env's private attributes."""

    def render_ansi(self, state: Any) -> str: ...

    def render_rgb(self, state: Any) -> np.ndarray: ...


ActT = TypeVar("ActT")


class SchedEnv(gym.Env[dict[str, np.ndarray], ActT], Generic[ActT]):
    """Common plumbing of every schedgym env: the constructor preamble (render mode, instance
    seed, scenario and instance resolution), ``render()`` through the env's viewer, and the
    refusal to ``step()`` before ``reset()``.

    Subclasses set ``viewer`` (their ``viewer`` module) and implement ``render_state()``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    viewer: ClassVar[Viewer]

    def _setup(
        self,
        render_mode: str | None,
        instance_seed: int,
        scenario: str,
        registry: ScenarioRegistry,
        overrides: dict[str, Any],
        instance: Any,
        instance_type: type,
        generate: Callable[[dict[str, Any], int], Any],
    ) -> tuple[Any, dict[str, Any], Any, str]:
        """Validate ``render_mode`` and ``instance_seed``, record them with ``scenario``, and
        return :func:`resolve_instance`'s ``(instance, params, sampler, source)``."""
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.instance_seed: int = check_seed("instance_seed", instance_seed) or 0
        self.scenario: str = scenario
        self._needs_reset = True
        return resolve_instance(registry, scenario, overrides, self.instance_seed, instance,
                                instance_type, generate)

    @property
    def max_episode_steps(self) -> int | None:
        """The most steps an episode can take (``horizon`` T where the env has one); filled into
        ``env.spec.max_episode_steps`` so that clients reading it see the real episode length."""
        horizon = getattr(self, "horizon", None)
        return int(horizon) if horizon is not None else None

    @property
    def spec(self) -> EnvSpec | None:
        """The registration spec ``gym.make`` attaches, with ``max_episode_steps`` set to
        :attr:`max_episode_steps`. The env truncates its own episodes, so ``gym.make`` adds no
        ``TimeLimit`` wrapper (it reads its own copy of the spec, registered without a limit
        because T depends on the scenario and the overrides)."""
        return getattr(self, "_spec", None)

    @spec.setter
    def spec(self, value: EnvSpec | None) -> None:
        if value is not None and value.max_episode_steps is None:
            value = dataclasses.replace(value, max_episode_steps=self.max_episode_steps)
        self._spec = value

    def _check_reset(self) -> None:
        """Raise if ``step()`` is called before the first ``reset()`` (as Gymnasium's
        ``OrderEnforcing`` wrapper does for a wrapped env)."""
        if getattr(self, "_needs_reset", True):
            raise gym.error.ResetNeeded(
                f"{type(self).__name__}.step() was called before reset(): call reset() first"
            )

    def render_state(self) -> Any:
        """The snapshot the viewer draws (a small frozen dataclass of the env's viewer)."""
        raise NotImplementedError

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: a text summary; ``"rgb_array"``: ``uint8 (H, W, 3)``; else ``None``."""
        if self.render_mode == "ansi":
            return self.viewer.render_ansi(self.render_state())
        if self.render_mode == "rgb_array":
            return self.viewer.render_rgb(self.render_state())
        return None
