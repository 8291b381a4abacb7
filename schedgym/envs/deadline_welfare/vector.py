"""Native batched DeadlineWelfare-v0: ``num_envs`` copies of one instance, stepped together.

``gym.make_vec("schedgym/DeadlineWelfare-v0", num_envs=B, vectorization_mode="vector_entry_point",
**kwargs)`` builds it (``kwargs`` as for ``gym.make``, including ``action_mode`` and
``instance_features``). One step = one job arrival in every copy. All copies share the instance
(same ``scenario``/``instance_seed``/overrides); each has its own episode seed and job stream.
With ``obs_mode="entities"`` the batch of flat observations is encoded by the template's
:class:`.entities.EntityEncoder` in one batched call, row for row the single env's.

Results equal ``B`` single envs under ``SyncVectorEnv`` bit for bit (observations, rewards,
terminated/truncated, infos with Gymnasium's ``_key`` masks): ``reset(seed=s)`` seeds copy ``i``
with ``s + i``; autoreset follows Gymnasium's default ``NEXT_STEP`` mode (the step after an
episode ends resets that copy, ignores its action, returns reward 0 and the new episode's reset
info). The episodes' jobs are the single env's: every resetting copy's episode is drawn by the
template's sampler and checked by the template's checks. The
step of every copy (decode, :func:`schedgym.envs.deadline_welfare.dynamics.apply_one`, the info's
sums) is one compiled call (:func:`_step_batch`), the observations another (:func:`_obs_batch`).
``render_mode`` (``"ansi"``, ``"rgb_array"``) is the single env's: ``render()`` returns every
copy's frame, drawn by the single env's viewer, as ``SyncVectorEnv`` does.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numba
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from schedgym.core.envbase import resolve_episode_seed
from schedgym.core.validation import check_int
from schedgym.envs.deadline_welfare import dynamics
from schedgym.envs.deadline_welfare.env import DeadlineWelfareEnv
from schedgym.envs.deadline_welfare.memory import estimate_mb
from schedgym.envs.deadline_welfare.pricing import alpha_hat
from schedgym.envs.deadline_welfare.tables import JobChunk, JobRows
from schedgym.envs.deadline_welfare.types import Jobs

#: Rows of :func:`_step_batch`'s ``out``.
_CAP_L1, _WL_L1, _FJ, _FC, _SERVED, _UNITS, _UTIL, _CLIP, _SLOT, _FRAC, _REPAIR, _WELFARE, \
    _REWARD = range(13)

#: The observation keys in :func:`_obs_batch`'s order.
_OBS_ORDER = ("workload", "window", "allowed", "capability", "utility_coef", "cluster_weight",
              "utility_family", "usage", "capacity", "bounds", "progress", "instance")


@numba.njit(cache=True)
def _step_batch(code: int, decode: bool, a: np.ndarray, prop: np.ndarray, prop_ptr: np.ndarray,
                clip_in: np.ndarray, step: np.ndarray, n: np.ndarray, n_jobs: np.ndarray,
                first: np.ndarray, ptr: np.ndarray, units: np.ndarray, cap: np.ndarray,
                coef: np.ndarray, weight: np.ndarray, job_scalars: np.ndarray,
                capacity: np.ndarray, usage: np.ndarray, totals: np.ndarray, x: np.ndarray,
                out: np.ndarray) -> None:
    """Every copy's step in one call, as the single env steps (:func:`.dynamics.apply_units`
    on the copy's current job ``n[b]``, entries ``[ptr[b, j], ptr[b, j + 1])`` of its chunk
    row ``b`` with ``j = n[b] - first[b]``, for the copies that ``step`` and have one). With
    ``decode``, ``a`` ``(B, U)`` are the (finite) dispatch actions, mapped by
    :func:`.dynamics.decode_units`; without, copy ``b``'s proposal on its job's entries is
    ``prop[prop_ptr[b]:prop_ptr[b + 1]]`` and ``clip_in`` the amounts clipped. Writes the
    dispatch into ``x`` (zeros given), updates ``usage`` and the stepping copies' ``totals``
    ``(B, 4)``, and fills ``out`` ``(13, B)``: repair parts, job and cluster utility, served
    share, units used, mean utilisation, action clip, slot, served fraction, repair, welfare,
    reward (sums as numpy adds them, :func:`.dynamics.np_sum`)."""
    B, U = x.shape
    ratio = np.empty(U)
    for b in range(B):
        cur = n[b] < n_jobs[b]
        i = min(n[b], max(n_jobs[b] - 1, 0))
        lo = hi = 0
        if cur:
            lo, hi = ptr[b, n[b] - first[b]], ptr[b, n[b] - first[b] + 1]
        if decode:
            p = np.empty(hi - lo)
            clip = dynamics.decode_units(a[b], units[b, lo:hi], cap[b, lo:hi], p)
        else:
            p = prop[prop_ptr[b]:prop_ptr[b + 1]]
            clip = clip_in[b]
        active = step[b] and cur
        rho = job_scalars[b, i, 0] if active else 0.0
        res = (0.0, 0.0, 0.0, 0.0)
        if active:
            res = dynamics.apply_units(code, p, units[b, lo:hi], cap[b, lo:hi],
                                       coef[b, lo:hi], weight[b, lo:hi], capacity, usage[b],
                                       rho, x[b], np.empty(hi - lo))
        served, count, util = dynamics.dispatch_stats(x[b], usage[b], capacity, ratio)
        if step[b]:
            totals[b, 0] += res[2]
            totals[b, 1] += res[3]
            totals[b, 2] += served
            totals[b, 3] += rho
        out[_CAP_L1, b], out[_WL_L1, b], out[_FJ, b], out[_FC, b] = res
        out[_SERVED, b] = served / rho if rho > 0 else 0.0
        out[_UNITS, b] = count
        out[_UTIL, b] = util
        out[_CLIP, b] = clip
        out[_SLOT, b] = job_scalars[b, i, 1] if n_jobs[b] > 0 else 0.0
        out[_FRAC, b] = totals[b, 2] / totals[b, 3] if totals[b, 3] > 0 else 0.0
        out[_REPAIR, b] = res[0] + res[1]
        out[_WELFARE, b] = totals[b, 0] + totals[b, 1]
        out[_REWARD, b] = res[2] + res[3] if step[b] else 0.0


@numba.njit(cache=True)
def _obs_batch(n: np.ndarray, n_jobs: np.ndarray, first: np.ndarray, ptr: np.ndarray,
               units: np.ndarray, cap: np.ndarray, coef: np.ndarray, weight: np.ndarray,
               job_scalars: np.ndarray, usage: np.ndarray, capacity32: np.ndarray,
               family: np.ndarray, bounds: np.ndarray, features: np.ndarray,
               offsets: np.ndarray, buf: np.ndarray) -> None:
    """Every copy's observation into one float32 buffer, key by key (``offsets`` in
    :data:`_OBS_ORDER`; each key a ``(B, size)`` block): the current job's scalars and its
    values at its units (zeros elsewhere and without a job), the family,
    ``min(float32(ω), float32(C))``, the capacities, the bounds, ``min(1, n / max(N, 1))`` and
    the instance features."""
    B, U = usage.shape
    F, K = family.size, features.size
    for b in range(B):
        cur = n[b] < n_jobs[b]
        i = min(n[b], max(n_jobs[b] - 1, 0))
        buf[offsets[0] + b] = job_scalars[b, i, 0] if cur else 0.0
        for j in range(2):
            buf[offsets[1] + 2 * b + j] = job_scalars[b, i, 1 + j] if cur else 0.0
        for r in range(U):
            for key in range(2, 6):
                buf[offsets[key] + b * U + r] = 0.0
            buf[offsets[7] + b * U + r] = min(np.float32(usage[b, r]), capacity32[r])
            buf[offsets[8] + b * U + r] = capacity32[r]
        if cur:
            j = n[b] - first[b]
            for e in range(ptr[b, j], ptr[b, j + 1]):
                u = units[b, e]
                buf[offsets[2] + b * U + u] = 1.0
                buf[offsets[3] + b * U + u] = cap[b, e]
                buf[offsets[4] + b * U + u] = coef[b, e]
                buf[offsets[5] + b * U + u] = weight[b, e]
        for j in range(F):
            buf[offsets[6] + b * F + j] = family[j]
        buf[offsets[9] + 2 * b] = bounds[b, 0]
        buf[offsets[9] + 2 * b + 1] = bounds[b, 1]
        buf[offsets[10] + b] = min(1.0, n[b] / max(n_jobs[b], 1))
        for j in range(K):
            buf[offsets[11] + b * K + j] = features[j]


class DeadlineWelfareVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` DeadlineWelfare-v0 copies of one instance; see the module docstring."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP,
                "render_modes": DeadlineWelfareEnv.metadata["render_modes"]}

    def __init__(self, num_envs: int = 1, render_mode: str | None = None,
                 **kwargs: Any) -> None:
        self.num_envs = check_int("num_envs", num_envs, min_value=1)
        # the template validates everything (render_mode included) and builds the instance
        self.template = DeadlineWelfareEnv(render_mode=render_mode, **kwargs)
        template = self.template
        self._check_memory()
        self.render_mode = template.render_mode
        inst = template.instance
        self.instance = inst
        self.action_mode = template.action_mode
        self.metadata = {**type(self).metadata,
                         "action_modes": template.metadata.get("action_modes", ("dispatch",)),
                         "obs_modes": template.metadata["obs_modes"],
                         "entity_action": template.metadata["entity_action"]}
        self.single_observation_space = template.observation_space
        self._obs_keys = tuple(template.flat_space.spaces)
        self.single_action_space = template.action_space
        self._action_dim = int(np.prod(template.action_space.shape or (1,)))
        self.observation_space = batch_space(template.observation_space, self.num_envs)
        self.action_space = batch_space(template.action_space, self.num_envs)
        self.spec = None
        B, U = self.num_envs, inst.n_units
        self._capacity = np.ascontiguousarray(inst.capacity.reshape(-1), dtype=np.float64)
        self._np_randoms: list[np.random.Generator | None] = [None] * B
        self._jobs: list[Jobs | None] = [None] * B
        self._rows: list[JobRows | None] = [None] * B
        self._usage = np.zeros((B, U))
        self._n = np.zeros(B, dtype=np.int64)
        self._n_jobs = np.zeros(B, dtype=np.int64)
        self._totals = np.zeros((B, 4))  # job utility, cluster utility, served, workload
        self._bounds = np.ones((B, 2))
        self._alpha = np.full(B, 2.0)
        self._seeds = np.zeros(B, dtype=np.int64)
        self._alloc(1, 1, 1)
        self._no_prop, self._no_ptr = np.zeros(0), np.zeros(B + 1, dtype=np.int64)
        self._autoreset = np.zeros(B, dtype=bool)
        self._needs_reset = True
        self._obs_layout()

    def _check_memory(self) -> None:
        """Refuse ``num_envs`` copies whose episodes would need more than the single env's
        ``memory_limit_mb`` together (each copy's episode, and its current chunk twice: the
        cursor's and the batch buffers')."""
        template = self.template
        one = template.memory_parts()
        parts = {k: self.num_envs * v for k, v in one.items()}
        parts["the batch buffers"] = self.num_envs * one["the current chunk"]
        need = estimate_mb(parts)
        if need > template.memory_limit_mb:
            raise ValueError(f"num_envs={self.num_envs} copies need about {need:,.0f} MB: more "
                             f"than memory_limit_mb={template.memory_limit_mb:,.0f} (pass fewer "
                             "copies or a larger memory_limit_mb=)")

    # ------------------------------------------------------------------ episode buffers
    def _alloc(self, n_jobs: int, n_chunk: int, n_entries: int) -> None:
        """Batch buffers for episodes of up to ``n_jobs`` jobs and chunks of up to ``n_chunk``
        jobs and ``n_entries`` entries (grown when an episode needs more; the copies' current
        chunks are copied over)."""
        B = self.num_envs
        old = getattr(self, "_c_ptr", None)
        keep = [(self._chunks[b], self._scalar_rows(b)) for b in range(B)] if old is not None \
            else [(None, None)] * B
        self._job_scalars = np.zeros((B, n_jobs, 3))  # workload, arrival, deadline
        self._c_first = np.zeros(B, dtype=np.int64)
        self._c_stop = np.zeros(B, dtype=np.int64)
        self._c_ptr = np.zeros((B, n_chunk + 1), dtype=np.int64)
        self._c_units = np.zeros((B, n_entries), dtype=np.int64)
        self._c_cap, self._c_coef, self._c_weight = (np.zeros((B, n_entries)) for _ in range(3))
        self._chunks: list[JobChunk | None] = [None] * B
        for b, (chunk, scalars) in enumerate(keep):
            if scalars is not None:
                self._job_scalars[b, :len(scalars)] = scalars
            if chunk is not None:
                self._load_chunk(b, chunk)

    def _scalar_rows(self, b: int) -> np.ndarray | None:
        jobs = self._jobs[b]
        return None if jobs is None else self._job_scalars[b, :jobs.n_jobs].copy()

    def _load_chunk(self, b: int, chunk: JobChunk) -> None:
        """Copy ``chunk`` into copy ``b``'s rows of the chunk buffers (grown if needed)."""
        k, m = chunk.ptr.size - 1, chunk.units.size
        if k + 1 > self._c_ptr.shape[1] or m > self._c_units.shape[1]:
            self._chunks[b] = None
            self._alloc(self._job_scalars.shape[1], max(k, self._c_ptr.shape[1] - 1),
                        max(m, self._c_units.shape[1]))
        self._chunks[b] = chunk
        self._c_first[b], self._c_stop[b] = chunk.first, chunk.stop
        self._c_ptr[b, :k + 1] = chunk.ptr
        self._c_units[b, :m] = chunk.units
        self._c_cap[b, :m] = chunk.capability
        self._c_coef[b, :m] = chunk.coef
        self._c_weight[b, :m] = chunk.weight

    def _refresh_chunks(self) -> None:
        """Load the chunk of every copy whose current job left its chunk."""
        n = self._n
        need = (n < self._n_jobs) & ((n < self._c_first) | (n >= self._c_stop))
        for b in np.flatnonzero(need).tolist():
            rows = self._rows[b]
            assert rows is not None
            self._load_chunk(b, rows.chunk(int(n[b])))

    def _store_jobs(self, b: int, jobs: Jobs, rows: JobRows) -> None:
        """Copy ``b``'s new episode into the batch buffers (grown if needed)."""
        N = jobs.n_jobs
        if N > self._job_scalars.shape[1]:
            self._alloc(N, self._c_ptr.shape[1] - 1, self._c_units.shape[1])
        self._jobs[b], self._rows[b] = jobs, rows
        self._job_scalars[b, :N, 0] = jobs.workload
        self._job_scalars[b, :N, 1] = jobs.arrival
        self._job_scalars[b, :N, 2] = jobs.deadline
        if N:
            self._load_chunk(b, rows.chunk(0))
        else:
            self._chunks[b] = None
            self._c_first[b] = self._c_stop[b] = 0

    def _episode_jobs(self, b: int) -> Jobs | None:
        """Copy ``b``'s episode's :class:`Jobs` (``None`` before its first reset)."""
        return self._jobs[b]

    def _episode_seed(self, b: int, seed: int | None) -> int:
        """Copy ``b``'s episode seed as the single env's reset resolves it (its own
        generator, seeded with ``seed`` when given)."""
        if seed is not None:
            self._np_randoms[b], _ = seeding.np_random(seed)
        elif self._np_randoms[b] is None:
            self._np_randoms[b], _ = seeding.np_random()
        rng = self._np_randoms[b]
        assert rng is not None
        return resolve_episode_seed(seed, rng)

    def _reset_batch(self, rows: list[int], seeds: list[int | None],
                     infos: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start new episodes in copies ``rows`` (their reset ``seeds``), copy by copy through
        the template's own sampler and checks (:meth:`_reset_one`); returns ``infos`` with
        those copies' reset infos added in Gymnasium's vector-info form."""
        got = [self._reset_one(b, seed) for b, seed in zip(rows, seeds, strict=True)]
        values = {key: [info[key] for info in got] for key in got[0]} if got else {}
        return self._batch_info(np.array(rows, dtype=np.int64), values, infos)

    def _batch_info(self, idx: np.ndarray, values: dict[str, list[Any]],
                    infos: dict[str, Any] | None = None) -> dict[str, Any]:
        """``infos`` with every copy ``idx[j]``'s value ``values[key][j]`` added, as
        Gymnasium's ``_add_info`` adds them one copy at a time (arrays of the values' Python
        type, ``_key`` masks, first-seen key order)."""
        infos = {} if infos is None else infos
        for key, vals in values.items():
            if key not in infos:
                infos[key] = np.zeros(self.num_envs, dtype=type(vals[0]))
            infos[key][idx] = vals
            mask = infos.get("_" + key, np.zeros(self.num_envs, dtype=np.bool_))
            mask[idx] = True
            infos["_" + key] = mask
        return infos

    def _reset_one(self, b: int, seed: int | None) -> dict[str, Any]:
        """Start a new episode in copy ``b`` as ``DeadlineWelfareEnv.reset`` does, through the
        template's own sampler and checks (a refused episode leaves the copy as it was);
        returns its reset info."""
        template = self.template
        ep = self._episode_seed(b, seed)
        jobs = template.draw_jobs(ep)
        scan = template.scan_jobs(jobs, copies=self.num_envs)
        self._store_jobs(b, jobs, scan.rows)
        bounds = scan.bounds
        self._n[b] = 0
        self._n_jobs[b] = jobs.n_jobs
        self._usage[b] = 0.0
        self._totals[b] = 0.0
        self._bounds[b] = bounds
        self._alpha[b] = alpha_hat(bounds[1] / bounds[0])
        self._seeds[b] = ep
        return {"n_jobs": jobs.n_jobs, "iota": bounds[0], "v": bounds[1],
                "alpha_hat": float(self._alpha[b]), "episode_seed": ep}

    # ------------------------------------------------------------------ observations
    def _obs_layout(self) -> None:
        """Where every observation key's ``(B, size)`` block lies in :meth:`_obs`'s buffer."""
        space = self.template.flat_space.spaces
        self._obs_blocks: dict[str, tuple[int, int]] = {}
        offsets = np.zeros(len(_OBS_ORDER), dtype=np.int64)
        k = 0
        for j, key in enumerate(_OBS_ORDER):
            offsets[j] = k
            if key in space:
                size = int(np.prod(space[key].shape or (1,)))
                self._obs_blocks[key] = (k, size)
                k += self.num_envs * size
        self._obs_offsets, self._obs_size = offsets, k
        template = self.template
        self._features = (template.instance_feature_vector() if template.instance_features
                          else np.zeros(0, dtype=np.float32))

    def _obs(self) -> dict[str, np.ndarray]:
        """The batched observations, filled by one compiled call (:func:`_obs_batch`) into one
        fresh float32 buffer; every key is a C-contiguous ``(B, size)`` view of its own block."""
        buf = np.empty(self._obs_size, dtype=np.float32)
        template = self.template
        _obs_batch(self._n, self._n_jobs, self._c_first, self._c_ptr, self._c_units, self._c_cap,
                   self._c_coef, self._c_weight, self._job_scalars, self._usage,
                   template.capacity32, template.family_onehot, self._bounds, self._features,
                   self._obs_offsets, buf)
        B = self.num_envs
        blocks = self._obs_blocks
        obs = {k: buf[blocks[k][0]:blocks[k][0] + B * blocks[k][1]].reshape(B, blocks[k][1])
               for k in self._obs_keys}
        encoder = template.entity_encoder
        return obs if encoder is None else encoder.encode_batch(obs)

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray],
                                                               dict[str, Any]]:
        """Reset every copy (copy ``i`` gets ``seed + i`` for an int seed, ``seed[i]`` for a
        list); returns the batched first observations and the reset infos."""
        B = self.num_envs
        if seed is None or isinstance(seed, int | np.integer):
            seeds = [None if seed is None else int(seed) + i for i in range(B)]
        else:
            seeds = list(seed)
            if len(seeds) != B:
                raise ValueError(f"seed has {len(seeds)} entries: must have num_envs={B}")
        infos = self._reset_batch(list(range(B)), seeds)
        self._autoreset[:] = False
        self._needs_reset = False
        return self._obs(), infos

    def _actions(self, actions: Any) -> np.ndarray:
        """Validated float64 ``(B, dim)`` actions (NaN/inf and wrong shapes raise)."""
        shape = (self.num_envs, self._action_dim)
        try:
            a = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"actions is invalid: expected a numeric array of shape {shape}, "
                             f"got {type(actions).__name__}") from None
        if a.shape != shape:
            raise ValueError(f"actions has shape {a.shape}: must have shape {shape}")
        bad = ~np.isfinite(a)
        if bad.any():
            b, i = (int(v[0]) for v in np.nonzero(bad))
            raise ValueError(f"actions[{b}] contains a non-finite entry (index {i}: "
                             f"{a[b, i]!r}): every entry must be finite")
        return a

    def _pricing_proposals(self, a: np.ndarray,
                           step: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(proposals, offsets, action_clip)`` of a learnable mode: every stepping copy with a
        current job decoded by the single env's own decoder, its proposal on its job's entries
        at ``proposals[offsets[b]:offsets[b + 1]]``; the clip amounts ``(B,)``."""
        clipped = np.clip(a, -1.0, 1.0)
        clip = np.max(np.abs(clipped - a), axis=1)
        parts: list[np.ndarray] = [np.zeros(0)] * self.num_envs
        for b in np.flatnonzero(step & (self._n < self._n_jobs)).tolist():
            parts[b] = self._point_template(b).job_proposal(clipped[b])  # single env's rule
        offsets = np.zeros(self.num_envs + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([p.size for p in parts])
        return np.concatenate(parts), offsets, clip

    def render(self) -> tuple[Any, ...] | None:
        """Every copy's frame as the single env draws it (``render_mode`` ``"ansi"``: text,
        ``"rgb_array"``: ``uint8 (H, W, 3)``), a tuple over copies as ``SyncVectorEnv`` gives;
        ``None`` without a render mode."""
        if self.render_mode is None:
            return None
        if self._needs_reset:
            raise RuntimeError("render() called before reset(): call reset() first")
        return tuple(self._point_template(b).render() for b in range(self.num_envs))

    def _point_template(self, b: int) -> DeadlineWelfareEnv:
        """The template env with copy ``b``'s episode state (views, no copies), so its own
        decoder and renderer act on that copy."""
        template = self.template
        template.show_state(self._episode_jobs(b), int(self._n[b]),
                     self._usage[b].reshape(self.instance.n_instances, -1), self._totals[b],
                     (float(self._bounds[b, 0]), float(self._bounds[b, 1])),
                     float(self._alpha[b]), rows=self._rows[b])
        return template

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray,
                                          np.ndarray, dict[str, Any]]:
        """Dispatch every copy's current job (see the module docstring)."""
        if self._needs_reset:
            raise RuntimeError("step() called before reset(): call reset() first")
        a = self._actions(actions)
        B = self.num_envs
        resets = self._autoreset.copy()
        step = ~resets
        decode = self.action_mode == "dispatch"
        clip, prop, prop_ptr = np.zeros(B), self._no_prop, self._no_ptr
        if not decode:
            prop, prop_ptr, clip = self._pricing_proposals(a, step)
        x = np.zeros((B, self.instance.n_units))
        out = np.empty((13, B))
        _step_batch(self.instance.family_code, decode, a, prop, prop_ptr, clip, step, self._n,
                    self._n_jobs, self._c_first, self._c_ptr, self._c_units, self._c_cap,
                    self._c_coef, self._c_weight, self._job_scalars, self._capacity,
                    self._usage, self._totals, x, out)
        infos = self._step_infos(step, x, out)
        rewards = out[_REWARD]
        self._n += step
        terminated = step & (self._n >= np.maximum(self._n_jobs, 1))
        if terminated.any():
            self._add_masked(infos, "final_usage", self._usage.reshape(
                (B, self.instance.n_instances, -1)).copy(), terminated)
        if resets.any():
            again = np.flatnonzero(resets).tolist()
            infos = self._reset_batch(again, [None] * len(again), infos)
        self._refresh_chunks()
        self._autoreset = terminated.copy()
        return self._obs(), rewards, terminated, np.zeros(B, dtype=bool), infos

    # ------------------------------------------------------------------ infos
    @staticmethod
    def _add_masked(infos: dict[str, Any], key: str, values: np.ndarray,
                    mask: np.ndarray) -> None:
        """``infos[key]`` = values where ``mask`` (zeros elsewhere), ``infos["_" + key]`` =
        mask: Gymnasium's vector-info convention."""
        if not mask.any():
            return
        if mask.all():  # values are fresh arrays: no copy needed
            infos[key] = values
        else:
            shape = (-1,) + (1,) * (values.ndim - 1)
            infos[key] = np.where(mask.reshape(shape), values, 0).astype(values.dtype)
        infos["_" + key] = mask.copy()

    def _step_infos(self, step: np.ndarray, x: np.ndarray, out: np.ndarray) -> dict[str, Any]:
        """The single env's step ``info`` of every stepping copy, batched, from
        :func:`_step_batch`'s ``out`` ``(13, B)``."""
        B = self.num_envs
        tot = self._totals
        values = {
            "job_utility": out[_FJ], "cluster_utility": out[_FC],
            "dispatch": x.reshape(B, self.instance.n_instances, -1),
            "served": out[_SERVED], "units_used": out[_UNITS].astype(np.int64),
            "repair_l1": out[_REPAIR], "repair_capacity": out[_CAP_L1],
            "repair_workload": out[_WL_L1], "action_clip": out[_CLIP],
            "slot": out[_SLOT].astype(np.int64), "job": self._n.copy(),
            "welfare": out[_WELFARE], "welfare_jobs": tot[:, 0].copy(),
            "welfare_cluster": tot[:, 1].copy(), "served_fraction": out[_FRAC],
            "utilization": out[_UTIL], "iota": self._bounds[:, 0].copy(),
            "v": self._bounds[:, 1].copy(), "alpha_hat": self._alpha.copy(),
            "n_jobs": self._n_jobs.copy(), "episode_seed": self._seeds.copy(),
        }
        infos: dict[str, Any] = {}
        if step.all():  # the common case: every value is a fresh array, every mask all True
            ones = np.ones(B, dtype=bool)
            for key, val in values.items():
                infos[key] = val
                infos["_" + key] = ones.copy()
            return infos
        for key, val in values.items():
            self._add_masked(infos, key, val, step)
        return infos

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release (no sub-processes)."""
        self.template.close()


__all__ = ["DeadlineWelfareVectorEnv"]
