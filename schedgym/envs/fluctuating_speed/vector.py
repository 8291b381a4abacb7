"""Native batched FluctuatingSpeed-v0: N copies of one instance stepped by one compiled kernel.

``gym.make_vec("schedgym/FluctuatingSpeed-v0", num_envs=N, vectorization_mode="vector_entry_point",
**kwargs)`` builds it. Every copy is a full single env (same ``scenario`` / ``instance_seed`` /
overrides / options, so the same instance); the single envs do what is rare and must match
exactly: construction and validation, seeding, pre-drawing an episode's arrivals and utilities in
``reset`` (so ``reset(seed=s)`` gives copy ``i`` the seed ``s + i`` and ``seed=None`` continues
each copy's own generator, as ``SyncVectorEnv`` does), the reset observation and reset info.
Every slot of every copy then runs through :func:`~.dynamics.slot_kernel` (validation, masking,
capacity repair, rewards and feedback), :func:`~.dynamics.advance_waits` and
:func:`~.dynamics.observe` in one compiled loop: the same functions, so observations, rewards,
flags and infos equal ``SyncVectorEnv`` over N single envs bit for bit (tested).

Autoreset follows Gymnasium's default ``NEXT_STEP`` mode: the step after a copy's episode ends
resets that copy (``seed=None``), ignores its action, returns reward 0 and its reset info.
``infos`` holds, per key, an array over copies and a boolean ``_key`` mask (Gymnasium's
convention): ``selection`` ``(N, |E|)`` int8, ``slot_arrivals`` ``(N, L)``, ``slot_feedback``
``(N, |E|)``, ``raw_utility``, ``expected_reward``, ``mean_utilization`` (float), ``n_selected``,
``n_masked``, ``n_repaired``, ``slot`` (int), ``repaired`` (bool) and, with
``compute_oracle=True``, ``oracle_value``, ``pseudo_regret``, ``realised_regret``. The oracle's
per-slot selection is solved once per reset for the whole episode (cached by arrival pattern).

Every ``action_mode`` works (``"scores"`` is decoded per copy by the single env's decoder, then
goes through the same kernel; its ``action_clip`` info is kept) and so does
``instance_features=True`` (the static ``instance`` key is repeated from the copy's reset
observation) and ``feedback_stats=True`` (running sums kept per copy, the entries built by the
single env's :func:`~.dynamics.feedback_stats`), and ``obs_mode="entities"`` (the kernel writes
the flat entries into scratch arrays, from which the single env's
:func:`~.entities.observation` builds every copy's rows at once). Not supported:
``render_mode`` (refused at construction: render through ``vectorization_mode="sync"``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numba
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from schedgym.core.validation import check_int
from schedgym.envs.fluctuating_speed import actions as actions_mod
from schedgym.envs.fluctuating_speed import dynamics as dyn
from schedgym.envs.fluctuating_speed import entities as ent_mod
from schedgym.envs.fluctuating_speed.env import FluctuatingSpeedEnv
from schedgym.envs.fluctuating_speed.offline import OracleSolver

#: The observation keys the kernel writes each slot (the others are static per episode, but
#: for the ``feedback_stats`` keys, written after the kernel).
DYNAMIC_KEYS = ("arrivals", "utilization", "feedback", "used", "waiting", "progress")
_FLOAT_INFO = {"raw_utility": dyn.RAW_UTILITY, "expected_reward": dyn.EXPECTED,
               "mean_utilization": dyn.UTIL_MEAN}
_INT_INFO = {"n_selected": dyn.N_SELECTED, "n_masked": dyn.N_MASKED,
             "n_repaired": dyn.N_REPAIRED}


@numba.njit(cache=True)
def _step_batch(actions: np.ndarray, active: np.ndarray, t: np.ndarray, arr: np.ndarray,
                zraw: np.ndarray, oracle_x: np.ndarray, tabs: dyn.SlotTables, repair: bool,
                cell: np.ndarray, x: np.ndarray, fb: np.ndarray, util: np.ndarray,
                origin: np.ndarray, out: np.ndarray,
                obs: tuple) -> tuple[int, int]:  # pragma: no cover - compiled
    """One slot of every ``active`` copy ``i`` at its slot ``t[i]`` (then ``t[i] += 1``):
    :func:`~.dynamics.slot_kernel`, :func:`~.dynamics.advance_waits`, :func:`~.dynamics.observe`
    into row ``i`` of the six observation arrays ``obs``. Returns ``(status, copy)`` of the first
    copy whose action is refused (``(OK, -1)`` if none; copies before it have stepped)."""
    o_arr, o_util, o_fb, o_used, o_wait, o_prog = obs
    T = arr.shape[1]
    for i in range(actions.shape[0]):
        if not active[i]:
            continue
        ti = t[i]
        status = dyn.slot_kernel(actions[i], arr[i, ti], zraw[i, ti], tabs, repair,
                                 oracle_x[i, ti], x[i], fb[i], util[i], out[i])
        if status != dyn.OK:
            return status, i
        nxt = min(ti + 1, T - 1)
        dyn.advance_waits(origin[i], x[i], tabs.port_of_edge, arr[i, nxt], ti + 1, ti + 1 < T)
        t[i] = ti + 1
        dyn.observe(arr[i, nxt], util[i], fb[i], x[i], origin[i], ti + 1, T, cell, o_arr[i],
                    o_util[i], o_fb[i], o_used[i], o_wait[i], o_prog[i])
    return dyn.OK, -1


def batch_buffer_mb(env: FluctuatingSpeedEnv, copies: int) -> float:
    """MiB of the vector env's per-episode batch buffers for ``copies`` copies of ``env``:
    arrivals ``(N, T, L)``, utilities ``(N, T, E)`` and oracle values ``(N, T)`` in float64,
    oracle selections ``(N, T, E)`` int8 (the per-slot rows, ``O(N (L + E + K))``, are
    negligible beside them)."""
    inst = env.instance
    L, E, T = inst.n_types, inst.n_edges, env.horizon
    return copies * T * (8.0 * (L + E + 1) + E) / 2.0**20


class FluctuatingSpeedVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` FluctuatingSpeed-v0 copies of one instance; see the module docstring.

    Args:
        num_envs: number of copies N >= 1.
        render_mode: must be ``None`` (the native batch does not render).
        max_episode_steps: optional step limit per episode (truncation), as ``TimeLimit``.
        **kwargs: the single env's arguments (``scenario``, ``instance_seed``, overrides, ...).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, render_mode: str | None = None,
                 max_episode_steps: int | None = None, **kwargs: Any) -> None:
        self.num_envs = check_int("num_envs", num_envs, min_value=1)
        if render_mode is not None:
            raise ValueError(
                f"render_mode={render_mode!r} is not supported by the native FluctuatingSpeed-v0 "
                "vector env: use gym.make_vec(..., vectorization_mode='sync') to render each copy")
        self.render_mode = None
        t = FluctuatingSpeedEnv(**kwargs)
        self._check_memory(t)
        self.envs = [t] + [FluctuatingSpeedEnv(**kwargs) for _ in range(self.num_envs - 1)]
        self.instance = t.instance
        self.horizon = t.horizon
        self.limit = self.horizon if max_episode_steps is None else check_int(
            "max_episode_steps", max_episode_steps, min_value=1)
        self.single_observation_space = t.observation_space
        self.single_action_space = t.action_space
        self.observation_space = batch_space(t.observation_space, self.num_envs)
        self.action_space = batch_space(t.action_space, self.num_envs)
        self._tabs = dyn.slot_tables(t.instance)
        self._scores = t.action_mode == "scores"
        # where edge e's feedback/use sit in the observation: per edge, or on the (L, R) grid
        self._cell = np.ascontiguousarray(
            t.instance.cell_of_edge if self._scores else np.arange(t.instance.n_edges),
            dtype=np.int64)
        self._oracle = OracleSolver(t.instance) if t.compute_oracle else None
        self._entities = t.obs_mode == "entities"
        self._stats = t.feedback_stats
        self._n_cells = t.n_cells
        if self._entities:
            assert t.entity_tables is not None
            self._etab = t.entity_tables
        self._alloc()

    def _check_memory(self, template: FluctuatingSpeedEnv) -> None:
        """Refuse, before the other copies are built, ``num_envs`` copies that would need more
        than the single env's ``memory_limit_mb`` together: each copy's own estimate
        (:meth:`FluctuatingSpeedEnv.memory_estimate_mb`, the check one env makes) times the
        copies, plus the batch buffers of :meth:`_alloc` (:func:`batch_buffer_mb`)."""
        N = self.num_envs
        need = N * template.memory_estimate_mb() + batch_buffer_mb(template, N)
        limit = template.params.memory_limit_mb
        if need > limit:
            raise ValueError(f"num_envs={N} copies need about {need:,.0f} MiB: more than "
                             f"memory_limit_mb={limit:g} (pass fewer copies or a larger "
                             "memory_limit_mb=)")

    def _alloc(self) -> None:
        N, T = self.num_envs, self.horizon
        inst = self.instance
        L, K, E = inst.n_types, inst.n_resources, inst.n_edges
        self._arr = np.zeros((N, T, L))
        self._z = np.zeros((N, T, E))
        self._ox = np.zeros((N, T, E), dtype=np.int8)
        # the kernels read it through a read-only view: the single env passes the oracle's
        # read-only selections, and one array type means one compiled slot_kernel
        self._ox_ro = self._ox.view()
        self._ox_ro.setflags(write=False)
        self._ov = np.zeros((N, T))
        self._t = np.zeros(N, dtype=np.int64)
        self._x = np.zeros((N, E), dtype=np.int8)
        self._fb = np.zeros((N, E))
        self._util = np.zeros((N, K))
        self._origin = -np.ones((N, L))
        self._out = np.zeros((N, dyn.N_SCALARS))
        self._fsum = np.zeros((N, E))
        self._fcount = np.zeros((N, E), dtype=np.int64)
        self._clip = np.zeros(N)
        self._static: list[dict[str, np.ndarray]] = [{} for _ in range(N)]
        self._autoreset = np.zeros(N, dtype=bool)
        self._needs_reset = True

    # ------------------------------------------------------------------ resets
    def _reset_one(self, i: int, seed: int | None,
                   options: dict[str, Any] | None) -> tuple[dict[str, np.ndarray], dict]:
        env = self.envs[i]
        obs, info = env.reset(seed=seed, options=options)
        self._arr[i] = env.arrivals
        self._z[i] = env.utilities
        if self._oracle is not None:
            self._ox[i], self._ov[i] = episode_oracle(self._oracle, env.arrivals)
        self._t[i] = 0
        self._x[i] = 0
        self._fb[i] = 0.0
        self._util[i] = 0.0
        self._origin[i] = dyn.open_waits(-np.ones(self.instance.n_types), env.arrivals[0], 0)
        self._fsum[i] = 0.0
        self._fcount[i] = 0
        self._static[i] = {} if self._entities else {
            k: v for k, v in obs.items() if k not in DYNAMIC_KEYS and k not in dyn.STATS_KEYS}
        return obs, info

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray],
                                                              dict[str, Any]]:
        """Reset every copy (or those of ``options["reset_mask"]``); seeds as ``SyncVectorEnv``:
        ``None``, an int ``s`` (copy ``i`` gets ``s + i``) or one seed per copy."""
        N = self.num_envs
        seeds = ([None] * N if seed is None else
                 [seed + i for i in range(N)] if isinstance(seed, int) else list(seed))
        if len(seeds) != N:
            raise ValueError(f"seed has {len(seeds)} entries: must have num_envs={N}")
        options = dict(options) if options else None
        mask = np.ones(N, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options.pop("reset_mask"), dtype=bool)
            if mask.shape != (N,) or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({N},) "
                                 "with at least one True entry")
        obs = self._empty_obs()
        infos: dict[str, Any] = {}
        given: dict[int, dict[str, np.ndarray]] = {}
        for i in np.flatnonzero(mask):
            o, info = self._reset_one(int(i), seeds[i], options)
            self._put(obs, given, int(i), o)
            infos = self._add_info(infos, info, int(i))
        self._autoreset[mask] = False
        if not mask.all():  # the other copies keep their current observation
            self._fill_obs(obs, ~mask)
        self._needs_reset = False
        return (self._to_entities(obs, given) if self._entities else obs), infos

    def _put(self, obs: dict[str, np.ndarray], given: dict[int, dict[str, np.ndarray]],
             i: int, o: dict[str, np.ndarray]) -> None:
        """Copy ``i``'s reset observation ``o`` into its row (entities mode: keep it aside for
        :meth:`_to_entities`)."""
        if self._entities:
            given[i] = o
            return
        for k, v in o.items():
            obs[k][i] = v

    # ------------------------------------------------------------- observations
    def _empty_obs(self) -> dict[str, np.ndarray]:
        """Zeroed observation arrays; in ``obs_mode="entities"`` the flat dynamic keys the
        kernel writes (as scratch: the entity rows are built from them by :meth:`_to_entities`)."""
        if self._entities:
            inst, N = self.instance, self.num_envs
            f32 = np.float32
            return {"arrivals": np.zeros((N, inst.n_types), f32),
                    "utilization": np.zeros((N, inst.n_resources), f32),
                    "feedback": np.zeros((N, self._n_cells), f32),
                    "used": np.zeros((N, self._n_cells), f32),
                    "waiting": np.zeros((N, inst.n_types), f32),
                    "progress": np.zeros((N, 1), f32)}
        space = self.single_observation_space
        assert isinstance(space, gym.spaces.Dict)
        return {k: np.zeros((self.num_envs, *(sp.shape or ())), dtype=sp.dtype)
                for k, sp in space.spaces.items()}

    def _to_entities(self, flat: dict[str, np.ndarray],
                     given: dict[int, dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The entity observations of every copy: copies in ``given`` (just reset) keep their
        reset observation, the others are built from the state and the kernel's flat arrays
        (:func:`~.entities.observation`, the single env's builder)."""
        out = ent_mod.observation(self._etab, ent_mod.EntityState(
            flat["arrivals"], flat["utilization"], self._fb, self._x, flat["waiting"], self._t,
            self.horizon, self._fsum, self._fcount))
        for i, o in given.items():
            for k, v in o.items():
                out[k][i] = v
        return out

    def _fill_obs(self, obs: dict[str, np.ndarray], rows: np.ndarray) -> None:
        """Observation rows ``rows`` (bool ``(N,)``) from the current state."""
        for i in np.flatnonzero(rows):
            ti = int(self._t[i])
            dyn.observe(self._arr[i, min(ti, self.horizon - 1)], self._util[i], self._fb[i],
                        self._x[i], self._origin[i], ti, self.horizon, self._cell,
                        obs["arrivals"][i],
                        obs["utilization"][i], obs["feedback"][i], obs["used"][i],
                        obs["waiting"][i], obs["progress"][i])
            for k, v in self._static[i].items():
                obs[k][i] = v
        self._stats_obs(obs, rows)

    def _stats_obs(self, obs: dict[str, np.ndarray], rows: np.ndarray) -> None:
        """The ``feedback_stats`` entries of rows ``rows`` (bool ``(N,)``) from the running sums
        (:func:`~.dynamics.feedback_stats`, as the single env); nothing without the option."""
        if self._stats:
            st = dyn.feedback_stats(self._fsum[rows], self._fcount[rows], self.horizon,
                                    self._cell, self._n_cells)
            for k, v in st.items():
                obs[k][rows] = v

    # -------------------------------------------------------------------- steps
    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray,
                                          np.ndarray, dict[str, Any]]:
        """One slot of every copy; copies whose episode ended last step are reset instead."""
        if self._needs_reset:
            raise gym.error.ResetNeeded(
                "FluctuatingSpeedVectorEnv.step() was called before reset(): call reset() first")
        active = ~self._autoreset
        acts = self._selections(actions, active)
        obs = self._empty_obs()
        status, bad = _step_batch(
            acts, active, self._t, self._arr, self._z, self._ox_ro, self._tabs,
            self.envs[0].invalid_action == "repair", self._cell, self._x, self._fb,
            self._util, self._origin, self._out, tuple(obs[k] for k in DYNAMIC_KEYS))
        if status == dyn.NON_BINARY:
            dyn.validate_selection(acts[bad], self.instance.n_edges)  # raises, naming the entry
        if status == dyn.OVER_CAPACITY:
            raise dyn.capacity_error(self._tabs, self._x[bad])
        if self._stats or self._entities:  # rows being reset are zeroed by their reset below
            dyn.accumulate_feedback(self._fsum, self._fcount, self._x, self._fb)
            self._stats_obs(obs, active)
        for i in np.flatnonzero(active):
            for k, v in self._static[i].items():
                obs[k][i] = v
        rewards = np.where(active, self._out[:, dyn.REWARD], 0.0)
        done = active & ((self._t >= self.horizon) | (self._t >= self.limit))
        truncated = done.copy()
        infos = self._step_infos(active) if active.any() else {}
        if self._scores and active.any():
            infos["action_clip"] = np.where(active, self._clip, 0.0)
            infos["_action_clip"] = active.copy()
        given: dict[int, dict[str, np.ndarray]] = {}
        for i in np.flatnonzero(self._autoreset):
            o, info = self._reset_one(int(i), None, None)
            self._put(obs, given, int(i), o)
            infos = self._add_info(infos, info, int(i))
        self._autoreset = done
        if self._entities:
            obs = self._to_entities(obs, given)
        return obs, rewards, np.zeros(self.num_envs, dtype=bool), truncated, infos

    def _selections(self, actions: Any, active: np.ndarray) -> np.ndarray:
        """The requested selections ``(N, |E|)``: the actions themselves in the default mode
        (checked by the kernel), or the ``"scores"`` decoder's feasible selections (the single
        env's :func:`~.actions.check_scores` / :func:`~.actions.decode_scores`)."""
        N, E = self.num_envs, self.instance.n_edges
        if not self._scores:
            acts = np.asarray(actions)
            if acts.shape != (N, E) or acts.dtype not in dyn.SELECTION_DTYPES:
                acts = np.stack([dyn.validate_selection(a, E) for a in _rows(actions, N, E)])
            return acts
        inst = self.instance
        rows = _rows(actions, N, inst.n_types * inst.n_instances)
        sel = np.zeros((N, E), dtype=np.int8)
        for i in np.flatnonzero(active):
            scores, self._clip[i] = actions_mod.check_scores(inst, rows[i])
            sel[i] = actions_mod.decode_scores(inst, scores, self._arr[i, self._t[i]])
        return sel

    def _step_infos(self, active: np.ndarray) -> dict[str, Any]:
        """The step infos of the ``active`` copies, as ``SyncVectorEnv`` batches them."""
        N = self.num_envs
        rows = np.arange(N)
        ti = self._t - 1  # the slot just played (active rows)
        out = np.where(active[:, None], self._out, 0.0)
        on = active[:, None]
        slot_arr = self._arr[rows, np.clip(ti, 0, None)]
        infos: dict[str, Any] = {
            "selection": np.where(on, self._x, 0).astype(np.int8),
            "slot_arrivals": np.where(on, slot_arr, 0.0),
            "slot_feedback": np.where(on, self._fb, 0.0),
        }
        for k, j in _FLOAT_INFO.items():
            infos[k] = out[:, j].copy()
        for k, j in _INT_INFO.items():
            infos[k] = out[:, j].astype(np.int64)
        infos["repaired"] = out[:, dyn.N_REPAIRED] > 0
        infos["slot"] = np.where(active, ti, 0)
        if self._oracle is not None:
            v = np.where(active, self._ov[rows, np.clip(ti, 0, None)], 0.0)
            infos["oracle_value"] = v
            infos["pseudo_regret"] = np.where(active, v - out[:, dyn.EXPECTED], 0.0)
            infos["realised_regret"] = np.where(
                active, out[:, dyn.ORACLE_REALISED] - out[:, dyn.REWARD], 0.0)
        for k in list(infos):
            infos[f"_{k}"] = active.copy()
        return infos

    def close_extras(self, **kwargs: Any) -> None:
        """Close the single envs."""
        for env in self.envs:
            env.close()


def _rows(actions: Any, n: int, size: int) -> list[Any]:
    """The ``n`` per-copy actions (``size`` entries each) of a batch, as a list."""
    try:
        rows = list(actions)
    except TypeError:
        raise ValueError(f"actions must be an (num_envs={n}, {size}) array, got "
                         f"{type(actions).__name__}") from None
    if len(rows) != n:
        raise ValueError(f"actions has {len(rows)} rows: must have num_envs={n} (one action "
                         f"of {size} entries per copy)")
    return rows


def episode_oracle(solver: OracleSolver, arrivals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The oracle's selection and value of every slot of an episode: ``(x (T, |E|) int8, value
    (T,))`` for arrivals ``(T, L)``, one :meth:`OracleSolver.solve` per distinct pattern
    (patterns are keyed as bit masks when ``L <= 62``, as rows otherwise)."""
    present = np.asarray(arrivals) > 0
    L = present.shape[1]
    if L <= 62:
        keys = present.astype(np.int64) @ (np.int64(1) << np.arange(L, dtype=np.int64))
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        patterns = present[first]
    else:
        patterns, inverse = np.unique(present, axis=0, return_inverse=True)
    xs = np.zeros((len(patterns), solver.instance.n_edges), dtype=np.int8)
    vs = np.zeros(len(patterns))
    for j, row in enumerate(patterns):
        x, v = solver.solve(row.astype(np.float64))
        xs[j], vs[j] = x, v
    inverse = inverse.reshape(-1)
    return xs[inverse], vs[inverse]
