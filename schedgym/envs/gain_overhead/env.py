"""GainOverhead-v0: online multi-resource allocation over a bipartite graph (OgaSched problem)."""

from __future__ import annotations

from typing import Any, ClassVar, cast

import numpy as np
from gymnasium import spaces

from schedgym.core import rng as rngs
from schedgym.core.arrays import readonly_view
from schedgym.core.arrivals import ArrivalSampler, bernoulli_arrivals
from schedgym.core.envbase import (
    SchedEnv,
    Viewer,
    clip_unit,
    decode_unit,
    encode_unit,
    frac_box,
    resolve_episode_seed,
    unit_box,
    validate_action,
)
from schedgym.envs.gain_overhead import dynamics, viewer
from schedgym.envs.gain_overhead.generator import SCENARIOS, generate, validate_params
from schedgym.envs.gain_overhead.types import GainOverheadInstance, GainOverheadParams
from schedgym.envs.gain_overhead.viewer import RenderState

#: The type Gymnasium's Env declares for observation spaces.
ObsSpace = spaces.Space[dict[str, np.ndarray]]


class GainOverheadEnv(SchedEnv[np.ndarray]):
    """Online allocation of multi-type resources to multi-server jobs (OgaSched, Zhao et al.).

    ## Description
    ``L`` job types (ports) and ``R`` computing instances form a bipartite service-locality graph
    with edges (channels) ``E``. In every time slot at most one job of each type arrives
    (``x_l(t) in {0, 1}``). The scheduler allocates ``y_(l,r)^k >= 0`` units of each of ``K``
    resource types over every channel, subject to the per-channel cap ``y <= a_l^k`` and the
    instance capacity ``sum_{l in L_r} y_(l,r)^k <= c_r^k``. Jobs last one slot; nothing carries
    over between slots.

    ## Action Space
    ``Box(-1, 1, (|E| * K,), float32)``: entry ``e * K + k`` is channel ``e`` (edges in
    lexicographic ``(l, r)`` order, ``instance.edges``) and resource ``k``. It is mapped affinely to
    ``[0, a_l^k]`` and then projected **exactly** (Euclidean) onto the feasible set Y, so every
    action is valid. Entries outside ``[-1, 1]`` are clipped first (``info["action_clip"]``);
    NaN/inf or a wrong shape raise ``ValueError``. ``encode_action(allocation)`` and
    ``decode_action(action)`` convert between actions and allocations ``(|E|, K)`` in resource
    units.

    ## Observation Space
    ``Dict`` of 1-D float32 boxes (use ``FlattenObservation`` for an ``MlpPolicy``):

    - ``arrivals`` ``(L,)`` in {0, 1}: ``x(t)``, the jobs of the slot about to be scheduled;
    - ``utilization`` ``(R * K,)`` in [0, 1]: fraction of each capacity ``c_r^k`` used by the
      previous slot's allocation (row-major ``(r, k)``; 0 at the first slot and where c = 0);
    - ``progress`` ``(1,)`` in [0, 1]: ``t / T``.

    ## Rewards
    The separable reward of spec ogasched §1.6 on the current arrivals:
    ``q = sum_l x_l [ sum_k sum_{r in R_l} f_r^k(y) - max_k beta_k sum_{r in R_l} y ]``,
    i.e. computation gain minus the dominant communication overhead. ``info`` holds ``gain``,
    ``penalty``, ``allocation`` ``(|E|, K)`` (applied, feasible), ``arrivals`` ``(L,)``,
    ``projection_distance`` (Euclidean distance moved to become feasible, resource units),
    ``action_clip`` and ``utilization`` (mean fraction of capacity used in this slot).

    ## Episode End
    Truncated after exactly ``T`` slots (``horizon``); never terminated.

    ## Arguments
    ``gym.make("schedgym/GainOverhead-v0", scenario="paper-default", instance_seed=0,
    instance=None, render_mode=None, **overrides)``. Scenarios: ``paper-default``,
    ``paper-headline``, ``large-scale`` and the trace-driven ``alibaba-gpu-2023`` (see
    :mod:`schedgym.envs.gain_overhead.trace`, which adds its own parameters such as
    ``slot_seconds`` and ``trace``). Overrides: ``n_types`` (L),
    ``n_instances`` (R), ``n_resources`` (K <= 6), ``horizon`` (T), ``arrival_prob`` (rho),
    ``contention``, ``alpha_range``, ``beta_range``, ``utility`` (linear, log, reciprocal, poly,
    mixed, or an ``(R, K)`` array of names), ``density`` (2, 2.5, 3), ``degree_choices``,
    ``reciprocal_scale``. An explicit ``instance`` (a :class:`GainOverheadInstance`) replaces the
    generator; ``horizon`` and ``arrival_prob`` still apply.

    Seeds: the instance is drawn once from ``instance_seed``; ``reset(seed=s)`` pre-draws the
    arrivals of the whole episode from an independent stream, so every agent run with the same
    ``(instance_seed, s)`` faces the same arrivals (common random numbers).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    viewer: ClassVar[Viewer] = viewer

    #: How ``schedgym compare`` aggregates the per-step info scalars over an episode.
    episode_metrics = {"reward": "sum", "gain": "sum", "penalty": "sum",
                       "projection_distance": "mean", "utilization": "mean"}

    def __init__(
        self,
        scenario: str = "paper-default",
        instance_seed: int = 0,
        instance: GainOverheadInstance | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        instance, raw, sampler, source = self._setup(
            render_mode, instance_seed, scenario, SCENARIOS, overrides, instance,
            GainOverheadInstance, generate)
        # The utility assignment lives in the instance; the sizes come from it.
        params = validate_params({**raw, "n_types": instance.n_types,
                                  "n_instances": instance.n_instances,
                                  "n_resources": instance.n_resources,
                                  "utility": raw["utility"] if source == "generator"
                                  else "linear"})
        self.params: GainOverheadParams = params
        self.instance: GainOverheadInstance = instance
        self.horizon: int = params.horizon
        self._sample_arrivals: ArrivalSampler = sampler or bernoulli_arrivals(
            instance.n_types, params.arrival_prob
        )

        L, R, K, E = (instance.n_types, instance.n_instances, instance.n_resources,
                      instance.n_edges)
        self._upper = instance.edge_caps.reshape(-1)  # (E*K,)
        self._half_upper = 0.5 * self._upper
        self._n_positive_caps = max(int((instance.capacities > 0).sum()), 1)
        self.action_space = unit_box(E * K)
        self.observation_space = cast(ObsSpace, spaces.Dict(
            {"arrivals": frac_box(L), "utilization": frac_box(R * K), "progress": frac_box(1)}
        ))
        self._t = 0
        self._arrivals = np.zeros((self.horizon, L))
        self._util = np.zeros(R * K)
        self._last_alloc = np.zeros((E, K))
        self.episode_seed: int | None = None

    # ---------------------------------------------------------------- helpers
    def decode_action(self, action: np.ndarray) -> np.ndarray:
        """Action in [-1, 1] ``(|E| K,)`` -> allocation ``(|E|, K)`` in resource units (before
        projection; entries outside [-1, 1] are clipped)."""
        a = validate_action(action, self._upper.size)
        a, _ = clip_unit(a)
        return decode_unit(a, self._upper).reshape(self.instance.n_edges, -1)

    def encode_action(self, allocation: np.ndarray) -> np.ndarray:
        """Allocation ``(|E|, K)`` (or flat) in resource units -> float32 action in [-1, 1]."""
        alloc = np.asarray(allocation, dtype=np.float64)
        if alloc.size != self._upper.size:
            raise ValueError(
                f"allocation has shape {alloc.shape}: must have shape "
                f"({self.instance.n_edges}, {self.instance.n_resources})"
            )
        return encode_unit(alloc.reshape(-1), self._upper)

    @property
    def arrivals(self) -> np.ndarray:
        """The episode's pre-drawn arrival matrix ``(T, L)`` (read-only view)."""
        return readonly_view(self._arrivals)

    @property
    def t(self) -> int:
        """Index of the slot about to be scheduled (0-based)."""
        return self._t

    def _obs(self) -> dict[str, np.ndarray]:
        x = self._arrivals[self._t] if self._t < self.horizon else np.zeros(self.instance.n_types)
        return {
            "arrivals": x.astype(np.float32),
            "utilization": self._util.astype(np.float32),
            "progress": np.array([self._t / self.horizon], dtype=np.float32),
        }

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.episode_seed = resolve_episode_seed(seed, self.np_random)
        self._arrivals = self._sample_arrivals(
            rngs.stream(self.episode_seed, "arrivals"), self.horizon
        )
        self._t = 0
        self._needs_reset = False
        self._util = np.zeros(self.instance.n_instances * self.instance.n_resources)
        self._last_alloc = np.zeros((self.instance.n_edges, self.instance.n_resources))
        return self._obs(), {"arrivals": self._arrivals[0].copy(), "slot": 0}

    def step(self, action: np.ndarray):
        self._check_reset()
        if self._t >= self.horizon:
            raise RuntimeError("step() called after the episode ended: call reset() first")
        inst = self.instance
        a = validate_action(action, self._upper.size)
        a, clip = clip_unit(a)
        z = ((a + 1.0) * self._half_upper).reshape(inst.n_edges, inst.n_resources)
        y, load = dynamics.project_grouped(inst, z)
        dist = float(np.linalg.norm(y - z))
        x = self._arrivals[self._t]
        parts = dynamics.reward_parts(inst, x, y)
        util = dynamics.utilization_from_load(inst, load)
        self._util = util.reshape(-1)
        self._last_alloc = y
        info = {
            "gain": parts.gain,
            "penalty": parts.penalty,
            "allocation": y,
            "arrivals": x.copy(),
            "projection_distance": dist,
            "action_clip": clip,
            "utilization": float(util.sum() / self._n_positive_caps),
            "slot": self._t,
        }
        self._t += 1
        truncated = self._t >= self.horizon
        return self._obs(), float(parts.reward), False, truncated, info

    def render_state(self) -> RenderState:
        """Snapshot of the last scheduled slot for :mod:`.viewer`."""
        inst = self.instance
        x = self._arrivals[self._t - 1] if self._t > 0 else np.zeros(inst.n_types)
        return RenderState(
            slot=self._t, horizon=self.horizon, n_arrived=int(x.sum()), n_types=inst.n_types,
            utilization=self._util.reshape(inst.n_instances, inst.n_resources).copy(),
            has_capacity=inst.capacities > 0, resource_names=inst.resource_names,
        )
