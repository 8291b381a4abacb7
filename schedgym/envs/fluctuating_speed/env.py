"""FluctuatingSpeed-v0: online channel selection with fluctuating processing speeds (ESDP)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from schedgym.core import rng as rngs
from schedgym.core.arrays import readonly_view
from schedgym.core.envbase import (
    check_render_mode,
    frac_box,
    resolve_episode_seed,
    resolve_instance,
)
from schedgym.core.validation import check_bool, check_choice, check_seed
from schedgym.envs.fluctuating_speed import dynamics
from schedgym.envs.fluctuating_speed.instance import (
    SCENARIOS,
    ArrivalSampler,
    FluctuatingSpeedInstance,
    arrival_probs,
    bernoulli_arrivals,
    generate,
    validate_params,
)
from schedgym.envs.fluctuating_speed.offline import OracleSolver
from schedgym.envs.fluctuating_speed.render import render_ansi, render_rgb

INVALID_ACTION_MODES = ("repair", "raise")


class FluctuatingSpeedEnv(gym.Env):
    """Online scheduling of multi-server jobs whose processing speed fluctuates (ESDP paper).

    ## Description
    ``L`` job types (ports) and ``R`` servers form a bipartite service-locality graph with edges
    (channels) ``E``. At the start of every slot each port holds a job with probability ``rho_l``.
    The scheduler selects a set of channels ``x in {0,1}^|E|``; a job may run on several of its
    channels in parallel. Channel ``e`` requests ``a_k^e`` devices of each of ``K`` types and the
    **cluster-wide** capacity is ``A x <= c``. A used channel yields a random utility
    ``Z_e(t) ~ N(mu_e, (mu_e/2)^2)`` (unknown mean: the fluctuating speed) minus a known cost
    ``C_e``; the net utility is normalised as ``clip(Z - C, 0, 1)`` (spec esdp §1.8). Devices are
    released at the end of the slot; unserved jobs are dropped (no queue).

    ## Action Space
    ``MultiBinary(|E|)``: entry ``e`` selects channel ``instance.edges[e]`` (lexicographic
    ``(l, r)``). Edges of ports without a job are **masked** (set to 0, ``info["n_masked"]``).
    A selection that breaks capacity is **repaired** by default (``invalid_action="repair"``):
    while ``A x > c``, drop the selected edge with the highest index among those requesting an
    overloaded device type (``info["n_repaired"]``, ``info["repaired"]``);
    ``invalid_action="raise"`` raises ``ValueError`` instead. A wrong shape or an entry other
    than 0/1 always raises ``ValueError``.

    ## Observation Space
    ``Dict`` of 1-D float32 boxes in [0, 1] (use ``FlattenObservation`` for an ``MlpPolicy``):

    - ``arrivals`` ``(L,)``: ``1_l(t)``, the jobs of the slot about to be scheduled;
    - ``utilization`` ``(K,)``: ``(A x(t-1))_k / c_k``, previous slot's cluster utilization;
    - ``feedback`` ``(|E|,)``: previous slot's realised net utility ``clip(Z_e - C_e, 0, 1)`` on
      every channel that was used, 0 elsewhere (semi-bandit feedback);
    - ``used`` ``(|E|,)``: 1 on the channels used in the previous slot (after masking/repair);
    - ``waiting`` ``(L,)``: head-of-line waiting time ``w_l(t) / T`` (spec esdp §5.3: slots since
      the oldest job not served since the port was last served; 0 if none);
    - ``progress`` ``(1,)``: ``t / T`` with ``t`` the 0-based slot index.

    All zeros except ``arrivals`` at the first slot. ``used`` + ``feedback`` is all an online
    learner needs (ESDP, HAUF, LWTF learn from them).

    ## Rewards
    ``sum_e x_e clip(Z_e(t) - C_e, 0, 1)`` over the applied selection (the normalised AOU
    increment). ``info``: ``selection`` (applied, int8 ``(|E|,)``), ``arrivals``, ``feedback``
    (``(|E|,)``, realised net utility on used channels, 0 elsewhere), ``reward``,
    ``raw_utility`` (unclipped
    ``sum_e x_e (Z_e - C_e)``), ``expected_reward`` (``theta^T x``), ``n_selected``,
    ``n_masked``, ``n_repaired``, ``repaired``, ``utilization`` (mean over types), ``slot`` and,
    with ``compute_oracle=True`` (default), ``oracle_value`` (``max theta^T x`` over the
    feasible, arrival-consistent selections), ``pseudo_regret`` (``oracle_value -
    expected_reward``) and ``realised_regret`` (oracle's realised net utility minus the reward).

    ## Episode End
    Truncated after exactly ``T`` slots (``horizon``); never terminated.

    ## Arguments
    ``gym.make("schedgym/FluctuatingSpeed-v0", scenario="paper-default", instance_seed=0,
    instance=None, render_mode=None, invalid_action="repair", compute_oracle=True,
    **overrides)``. Scenarios: ``paper-default`` (spec §6.3), ``paper-headline`` (T = 8000),
    ``literal-capacity`` (kappa = 1), ``alibaba-gpu-2023`` (types, locality graph, relative
    sizes and arrivals from the shipped Alibaba trace sample, see
    :func:`~schedgym.envs.fluctuating_speed.instance.trace_builder`; extra overrides
    ``slot_seconds`` = 600 and ``degree_cap`` = 4). Overrides (paper symbol): ``n_types`` (|L|),
    ``n_instances`` (|R|), ``n_resources`` (K), ``horizon`` (T), ``arrival_prob`` (rho, scalar or
    one per port), ``edge_prob`` (Table 3 rho_(l,r)), ``request_range`` (bounds of A),
    ``capacity_range`` (bounds of c), ``capacity_scale`` (kappa), ``mean_range`` (mu),
    ``std_ratio``, ``cost_mean``, ``cost_std``, ``cost_scale`` (lambda). An explicit ``instance``
    (a :class:`FluctuatingSpeedInstance`) replaces the generator; ``horizon`` and
    ``arrival_prob`` still apply.

    Seeds: the instance is drawn once from ``instance_seed``; ``reset(seed=s)`` pre-draws the
    arrivals ``(T, L)`` and raw utilities ``(T, |E|)`` of the whole episode from independent
    streams, so every agent run with the same ``(instance_seed, s)`` faces the same world
    (common random numbers).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    #: How ``schedgym compare`` aggregates the per-step info scalars over an episode.
    episode_metrics = {"reward": "sum", "expected_reward": "sum", "raw_utility": "sum",
                       "oracle_value": "sum", "pseudo_regret": "sum", "realised_regret": "sum",
                       "n_masked": "sum", "n_repaired": "sum", "utilization": "mean"}

    def __init__(
        self,
        scenario: str = "paper-default",
        instance_seed: int = 0,
        instance: FluctuatingSpeedInstance | None = None,
        render_mode: str | None = None,
        invalid_action: str = "repair",
        compute_oracle: bool = True,
        **overrides: Any,
    ) -> None:
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self.invalid_action = check_choice("invalid_action", invalid_action,
                                           INVALID_ACTION_MODES)
        self.compute_oracle = check_bool("compute_oracle", compute_oracle)
        if not self.compute_oracle:  # no oracle keys in info: do not report them as zeros
            self.episode_metrics = {k: v for k, v in type(self).episode_metrics.items()
                                    if k not in ("oracle_value", "pseudo_regret",
                                                 "realised_regret")}
        self.instance_seed = check_seed("instance_seed", instance_seed) or 0
        self.scenario = scenario
        instance, params, sampler, _ = resolve_instance(
            SCENARIOS, scenario, overrides, self.instance_seed, instance,
            FluctuatingSpeedInstance, generate)
        params = validate_params({**params, "n_types": instance.n_types,
                                  "n_instances": instance.n_instances,
                                  "n_resources": instance.n_resources})
        self.params = params
        self.instance: FluctuatingSpeedInstance = instance
        self.horizon: int = params["horizon"]
        self._sample_arrivals: ArrivalSampler = sampler or bernoulli_arrivals(
            arrival_probs(params, instance.n_types)
        )
        self._oracle = OracleSolver(instance)

        L, K, E = instance.n_types, instance.n_resources, instance.n_edges
        self.action_space = spaces.MultiBinary(E)
        self.observation_space = spaces.Dict({
            "arrivals": frac_box(L), "utilization": frac_box(K), "feedback": frac_box(E),
            "used": frac_box(E), "waiting": frac_box(L), "progress": frac_box(1),
        })
        self.episode_seed: int | None = None
        self._arrivals = np.zeros((self.horizon, L))
        self._zraw = np.zeros((self.horizon, E))
        self._reset_state()

    def _reset_state(self) -> None:
        inst = self.instance
        self._t = 0
        self._last_x = np.zeros(inst.n_edges, dtype=np.int8)
        self._last_feedback = np.zeros(inst.n_edges)
        self._origin = -np.ones(inst.n_types)  # arrival slot of the oldest unserved job

    # ---------------------------------------------------------------- helpers
    @property
    def arrivals(self) -> np.ndarray:
        """The episode's pre-drawn arrival matrix ``(T, L)`` in {0, 1} (read-only view)."""
        return readonly_view(self._arrivals)

    @property
    def utilities(self) -> np.ndarray:
        """The episode's pre-drawn raw utilities ``Z`` ``(T, |E|)`` (read-only view; hidden from
        agents, for metrics and tests)."""
        return readonly_view(self._zraw)

    @property
    def t(self) -> int:
        """Index of the slot about to be scheduled (0-based)."""
        return self._t

    def _obs(self) -> dict[str, np.ndarray]:
        inst = self.instance
        t = self._t
        x = self._arrivals[t] if t < self.horizon else np.zeros(inst.n_types)
        return {
            "arrivals": x.astype(np.float32),
            "utilization": dynamics.utilization(inst, self._last_x).astype(np.float32),
            "feedback": self._last_feedback.astype(np.float32),
            "used": self._last_x.astype(np.float32),
            "waiting": (dynamics.waiting_times(self._origin, t) / self.horizon).astype(np.float32),
            "progress": np.array([t / self.horizon], dtype=np.float32),
        }

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.episode_seed = resolve_episode_seed(seed, self.np_random)
        inst = self.instance
        self._arrivals = np.asarray(
            self._sample_arrivals(rngs.stream(self.episode_seed, "arrivals"), self.horizon),
            dtype=np.float64,
        )
        noise = rngs.stream(self.episode_seed, "utilities").standard_normal(
            (self.horizon, inst.n_edges))
        self._zraw = inst.mean + inst.std * noise
        self._reset_state()
        self._origin = dynamics.open_waits(self._origin, self._arrivals[0], 0)
        return self._obs(), {"arrivals": self._arrivals[0].copy(), "slot": 0}

    def step(self, action: Any):
        if self._t >= self.horizon:
            raise RuntimeError("step() called after the episode ended: call reset() first")
        inst = self.instance
        t = self._t
        x_req = dynamics.validate_selection(action, inst.n_edges)
        arr = self._arrivals[t]
        mask = dynamics.edge_mask(inst, arr)
        x = x_req * mask
        n_masked = int(x_req.sum() - x.sum())
        n_repaired = 0
        if not dynamics.is_feasible(inst, x):
            if self.invalid_action == "raise":
                raise ValueError(
                    f"action breaks capacity: devices requested A x = "
                    f"{dynamics.load(inst, x).tolist()} > c = {inst.capacities.tolist()} "
                    "(after masking absent ports); use invalid_action='repair' to repair it"
                )
            x, n_repaired = dynamics.repair(inst, x)
        z_net = dynamics.net_utility(self._zraw[t], inst.cost)
        reward = float(x @ z_net)
        used = x.astype(bool)
        util = dynamics.utilization(inst, x)
        info: dict[str, Any] = {
            "selection": x.copy(),
            "arrivals": arr.copy(),
            "feedback": np.where(used, z_net, 0.0),
            "reward": reward,
            "raw_utility": float(x @ (self._zraw[t] - inst.cost)),
            "expected_reward": float(inst.theta @ x),
            "n_selected": int(x_req.sum()),
            "n_masked": n_masked,
            "n_repaired": n_repaired,
            "repaired": n_repaired > 0,
            "utilization": float(util.mean()),
            "slot": t,
        }
        if self.compute_oracle:
            x_star, v_star = self._oracle.solve(arr)
            info["oracle_value"] = v_star
            info["pseudo_regret"] = v_star - info["expected_reward"]
            info["realised_regret"] = float(x_star @ z_net) - reward
        self._last_x = x
        self._last_feedback = np.where(used, z_net, 0.0)
        self._origin = dynamics.close_waits(inst, self._origin, x)
        self._t += 1
        if self._t < self.horizon:
            self._origin = dynamics.open_waits(self._origin, self._arrivals[self._t], self._t)
        truncated = self._t >= self.horizon
        return self._obs(), reward, False, truncated, info

    def render(self):
        if self.render_mode == "ansi":
            return render_ansi(self)
        if self.render_mode == "rgb_array":
            return render_rgb(self)
        return None
