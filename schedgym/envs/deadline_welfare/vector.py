"""Native batched DeadlineWelfare-v0: ``num_envs`` copies of one instance, stepped together.

``gym.make_vec("schedgym/DeadlineWelfare-v0", num_envs=B, vectorization_mode="vector_entry_point",
**kwargs)`` builds it (``kwargs`` as for ``gym.make``, including ``action_mode`` and
``instance_features``). One step = one job arrival in every copy. All copies share the instance
(same ``scenario``/``instance_seed``/overrides); each has its own episode seed and job stream.

Results equal ``B`` single envs under ``SyncVectorEnv`` bit for bit (observations, rewards,
terminated/truncated, infos with Gymnasium's ``_key`` masks): ``reset(seed=s)`` seeds copy ``i``
with ``s + i``; autoreset follows Gymnasium's default ``NEXT_STEP`` mode (the step after an
episode ends resets that copy, ignores its action, returns reward 0 and the new episode's reset
info). The episodes' jobs come from the single env's own sampler and checks; the repair, the
usage update and the welfare of every copy run in one compiled call
(:func:`schedgym.envs.deadline_welfare.dynamics.apply_batch`) and the observations are built for
all copies at once. ``render_mode`` (``"ansi"``, ``"rgb_array"``) is the single env's:
``render()`` returns every copy's frame, drawn by the single env's viewer, as ``SyncVectorEnv``
does.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numba
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from schedgym.core.envbase import resolve_episode_seed
from schedgym.core.validation import check_int
from schedgym.envs.deadline_welfare import dynamics
from schedgym.envs.deadline_welfare.env import DeadlineWelfareEnv
from schedgym.envs.deadline_welfare.generator import estimate_memory_mb
from schedgym.envs.deadline_welfare.pricing import alpha_hat
from schedgym.envs.deadline_welfare.types import Jobs

#: Integer-valued per-step ``info`` keys of the single env (the others are floats or arrays).
_STEP_INT = ("units_used", "slot", "job")


@numba.njit(cache=True)
def _gather(job_mask: np.ndarray, job_cap: np.ndarray, job_coef: np.ndarray,
            job_weight: np.ndarray, idx: np.ndarray, cur: np.ndarray, mask: np.ndarray,
            cap: np.ndarray, coef: np.ndarray, weight: np.ndarray) -> None:
    """Every copy's job ``idx[b]`` from the padded buffers ``(B, n_max, U)`` into ``(B, U)``
    rows (float64 or float32): its unit mask (False for copies without a current job, ``cur``)
    and its capability, coefficient and weight on those units (0 elsewhere)."""
    for b in range(mask.shape[0]):
        i = idx[b]
        for r in range(mask.shape[1]):
            m = cur[b] and job_mask[b, i, r]
            mask[b, r] = m
            cap[b, r] = job_cap[b, i, r] if m else 0.0
            coef[b, r] = job_coef[b, i, r] if m else 0.0
            weight[b, r] = job_weight[b, i, r] if m else 0.0


class DeadlineWelfareVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` DeadlineWelfare-v0 copies of one instance; see the module docstring."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP,
                "render_modes": DeadlineWelfareEnv.metadata["render_modes"]}

    def __init__(self, num_envs: int = 1, render_mode: str | None = None,
                 **kwargs: Any) -> None:
        self.num_envs = check_int("num_envs", num_envs, min_value=1)
        # the template validates everything (render_mode included) and builds the instance
        self.template = DeadlineWelfareEnv(render_mode=render_mode, **kwargs)
        t = self.template
        self._check_memory()
        self.render_mode = t.render_mode
        inst = t.instance
        self.instance = inst
        self.action_mode = t.action_mode
        self.metadata = {**type(self).metadata,
                         "action_modes": t.metadata.get("action_modes", ("dispatch",))}
        self.single_observation_space = t.observation_space
        self._obs_keys = tuple(cast(spaces.Dict, t.observation_space).spaces)
        self.single_action_space = t.action_space
        self._action_dim = int(np.prod(t.action_space.shape or (1,)))
        self.observation_space = batch_space(t.observation_space, self.num_envs)
        self.action_space = batch_space(t.action_space, self.num_envs)
        self.spec = None
        B, U = self.num_envs, inst.n_units
        self._capacity = np.ascontiguousarray(inst.capacity.reshape(-1), dtype=np.float64)
        self._np_randoms: list[np.random.Generator | None] = [None] * B
        self._jobs: list[Jobs | None] = [None] * B
        self._usage = np.zeros((B, U))
        self._n = np.zeros(B, dtype=np.int64)
        self._n_jobs = np.zeros(B, dtype=np.int64)
        self._totals = np.zeros((B, 4))  # job utility, cluster utility, served, workload
        self._bounds = np.ones((B, 2))
        self._alpha = np.full(B, 2.0)
        self._seeds = np.zeros(B, dtype=np.int64)
        self._alloc_jobs(1)
        self._autoreset = np.zeros(B, dtype=bool)
        self._needs_reset = True
        static = {"utility_family": t._family, "capacity": t._capacity32}
        if t.instance_features:
            static["instance"] = t.instance_feature_vector()
        self._static = {k: np.tile(v, (B, 1)) for k, v in static.items()}

    def _check_memory(self) -> None:
        """Refuse ``num_envs`` copies whose episodes would need more than the single env's
        ``memory_limit_mb`` together (each copy holds its episode's jobs twice: the sampler's
        arrays and the batch buffers)."""
        t = self.template
        inst = t.instance
        n_jobs = inst.jobs.n_jobs if inst.jobs is not None else t.params["n_jobs"]
        need = 2 * self.num_envs * estimate_memory_mb(inst.n_instances, inst.horizon, n_jobs,
                                                       t.params["arrival_rate"])
        if need > t.memory_limit_mb:
            raise ValueError(f"num_envs={self.num_envs} copies need about {need:,.0f} MB: more "
                             f"than memory_limit_mb={t.memory_limit_mb:,.0f} (pass fewer copies "
                             "or a larger memory_limit_mb=)")

    # ------------------------------------------------------------------ episode buffers
    def _alloc_jobs(self, n_max: int) -> None:
        """Padded per-copy job buffers ``(B, n_max, U)`` (grown when an episode needs more)."""
        B, U = self.num_envs, self.instance.n_units
        old = getattr(self, "_job_mask", None)
        self._job_mask = np.zeros((B, n_max, U), dtype=bool)
        self._job_cap = np.zeros((B, n_max, U))
        self._job_coef = np.zeros((B, n_max, U))
        self._job_weight = np.zeros((B, n_max, U))
        self._job_scalars = np.zeros((B, n_max, 3))  # workload, arrival, deadline
        if old is not None:  # re-fill the copies' current episodes
            for b, jobs in enumerate(self._jobs):
                if jobs is not None:
                    self._store_jobs(b, jobs)

    def _store_jobs(self, b: int, jobs: Jobs) -> None:
        N = jobs.n_jobs
        if N > self._job_mask.shape[1]:
            self._jobs[b] = jobs
            self._alloc_jobs(N)
            return
        shape = (N, self.instance.n_units)
        self._job_mask[b, :N] = jobs.mask.reshape(shape)
        for buf, arr in ((self._job_cap, jobs.capability), (self._job_coef, jobs.coef),
                         (self._job_weight, jobs.weight)):
            buf[b, :N] = arr.reshape(shape)  # Jobs holds full (N, R, T) arrays
        self._job_scalars[b, :N, 0] = jobs.workload
        self._job_scalars[b, :N, 1] = jobs.arrival
        self._job_scalars[b, :N, 2] = jobs.deadline

    def _reset_one(self, b: int, seed: int | None) -> dict[str, Any]:
        """Start a new episode in copy ``b`` as ``DeadlineWelfareEnv.reset`` does; returns its
        reset info."""
        if seed is not None:
            self._np_randoms[b], _ = seeding.np_random(seed)
        elif self._np_randoms[b] is None:
            self._np_randoms[b], _ = seeding.np_random()
        rng = self._np_randoms[b]
        assert rng is not None
        t = self.template
        ep = resolve_episode_seed(seed, rng)
        jobs = t._sample_jobs(ep)
        t._check_jobs(jobs)
        self._jobs[b] = jobs
        self._store_jobs(b, jobs)
        self._n[b] = 0
        self._n_jobs[b] = jobs.n_jobs
        self._usage[b] = 0.0
        self._totals[b] = 0.0
        bounds = dynamics.marginal_bounds(self.instance, jobs)
        self._bounds[b] = bounds
        self._alpha[b] = alpha_hat(bounds[1] / bounds[0])
        self._seeds[b] = ep
        return {"n_jobs": jobs.n_jobs, "iota": bounds[0], "v": bounds[1],
                "alpha_hat": float(self._alpha[b]), "episode_seed": ep}

    # ------------------------------------------------------------------ observations
    def _current(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, job index, has a job)`` of every copy's current job in the buffers."""
        rows = np.arange(self.num_envs)
        cur = self._n < self._n_jobs
        idx = np.minimum(self._n, np.maximum(self._n_jobs - 1, 0))
        return rows, idx, cur

    def _gathered(self, dtype: type) -> tuple[np.ndarray, ...]:
        """``(mask, capability, coef, weight)`` ``(B, U)`` of every copy's current job (zeros
        off its units and for copies past their last job), floats in ``dtype``."""
        _, idx, cur = self._current()
        B, U = self.num_envs, self.instance.n_units
        out = (np.empty((B, U), dtype=bool),) + tuple(np.empty((B, U), dtype=dtype)
                                                       for _ in range(3))
        _gather(self._job_mask, self._job_cap, self._job_coef, self._job_weight, idx, cur,
                *out)
        return out

    def _obs(self) -> dict[str, np.ndarray]:
        rows, idx, cur = self._current()
        mask, cap, coef, weight = self._gathered(np.float32)
        sc = np.where(cur[:, None], self._job_scalars[rows, idx], 0.0).astype(np.float32)
        f32 = np.float32
        obs = {
            "workload": sc[:, :1], "window": sc[:, 1:],
            "allowed": mask.astype(f32), "capability": cap, "utility_coef": coef,
            "cluster_weight": weight,
            "utility_family": self._static["utility_family"].copy(),
            "usage": np.minimum(self._usage.astype(f32), self._static["capacity"]),
            "capacity": self._static["capacity"].copy(),
            "bounds": self._bounds.astype(f32),
            "progress": (np.minimum(1.0, self._n / np.maximum(self._n_jobs, 1))
                         .astype(f32)[:, None]),
        }
        if "instance" in self._static:
            obs["instance"] = self._static["instance"].copy()
        return {k: np.ascontiguousarray(obs[k]) for k in self._obs_keys}

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
        infos: dict[str, Any] = {}
        for b in range(B):
            infos = self._add_info(infos, self._reset_one(b, seeds[b]), b)
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

    def _proposals(self, a: np.ndarray, step: np.ndarray,
                   upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(proposal, action_clip)`` ``(B, U)``, ``(B,)`` of the copies that step, decoded
        as the single env decodes them (``upper``: x̄ on the current job's units)."""
        clipped = np.clip(a, -1.0, 1.0)
        clip = np.max(np.abs(clipped - a), axis=1)
        if self.action_mode == "dispatch":
            return (clipped + 1.0) * 0.5 * upper, clip
        proposal = np.zeros_like(upper)
        for b in np.flatnonzero(step & (self._n < self._n_jobs)).tolist():
            proposal[b] = self._template_decode(b, clipped[b]).reshape(-1)  # single env's rule
        return proposal, clip

    def _template_decode(self, b: int, a: np.ndarray) -> np.ndarray:
        """The single env's own decoder on copy ``b``'s state."""
        return np.asarray(self._point_template(b)._decode(a))

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
        t = self.template
        t._jobs = self._jobs[b]
        t._n = int(self._n[b])
        t._usage = self._usage[b].reshape(self.instance.n_instances, -1)
        t._totals = self._totals[b]
        t._bounds = (float(self._bounds[b, 0]), float(self._bounds[b, 1]))
        t._alpha = float(self._alpha[b])
        return t

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray,
                                          np.ndarray, dict[str, Any]]:
        """Dispatch every copy's current job (see the module docstring)."""
        if self._needs_reset:
            raise RuntimeError("step() called before reset(): call reset() first")
        a = self._actions(actions)
        B = self.num_envs
        resets = self._autoreset.copy()
        step = ~resets
        rows, idx, cur = self._current()
        mask, upper, coef, weight = self._gathered(np.float64)
        proposal, clip = self._proposals(a, step, upper)
        active = step & cur
        x = np.zeros((B, self.instance.n_units))
        out = np.zeros((B, 4))
        scal = self._job_scalars[rows, idx]
        rho = np.where(active, scal[:, 0], 0.0)
        dynamics.apply_batch(self.instance.family_code, proposal, upper, self._capacity,
                             self._usage, rho, mask, coef, weight, active, x, out)
        infos = self._step_infos(step, x, out, rho, clip, scal)
        rewards = np.where(step, out[:, 2] + out[:, 3], 0.0)
        self._n += step
        terminated = step & (self._n >= np.maximum(self._n_jobs, 1))
        if terminated.any():
            self._add_masked(infos, "final_usage", self._usage.reshape(
                (B, self.instance.n_instances, -1)).copy(), terminated)
        for b in np.flatnonzero(resets).tolist():
            infos = self._add_info(infos, self._reset_one(b, None), b)
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

    def _step_infos(self, step: np.ndarray, x: np.ndarray, out: np.ndarray,
                    rho: np.ndarray, clip: np.ndarray, scal: np.ndarray) -> dict[str, Any]:
        """The single env's step ``info`` of every stepping copy, batched; updates the running
        totals of those copies."""
        B = self.num_envs
        served = x.sum(axis=1)
        self._totals[step] += np.stack([out[:, 2], out[:, 3], served, rho], axis=1)[step]
        tot = self._totals
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(tot[:, 3] > 0, tot[:, 2] / tot[:, 3], 0.0)
            served_share = np.where(rho > 0, served / rho, 0.0)
        values = {
            "job_utility": out[:, 2], "cluster_utility": out[:, 3],
            "dispatch": x.reshape(B, self.instance.n_instances, -1),
            "served": served_share, "units_used": np.count_nonzero(x > 1e-9, axis=1),
            "repair_l1": out[:, 0] + out[:, 1], "repair_capacity": out[:, 0],
            "repair_workload": out[:, 1], "action_clip": clip,
            "slot": np.where(self._n_jobs > 0, scal[:, 1], 0).astype(np.int64),
            "job": self._n.copy(),
            "welfare": tot[:, 0] + tot[:, 1], "welfare_jobs": tot[:, 0].copy(),
            "welfare_cluster": tot[:, 1].copy(), "served_fraction": frac,
            "utilization": np.mean(self._usage / self._capacity, axis=1),
            "iota": self._bounds[:, 0].copy(), "v": self._bounds[:, 1].copy(),
            "alpha_hat": self._alpha.copy(),
        }
        infos: dict[str, Any] = {}
        if step.all():  # the common case: every value is a fresh array, every mask all True
            for key, val in values.items():
                infos[key] = val.astype(np.int64) if key in _STEP_INT else val
                infos["_" + key] = np.ones(B, dtype=bool)
            return infos
        for key, val in values.items():
            dtype = np.int64 if key in _STEP_INT else val.dtype
            self._add_masked(infos, key, np.asarray(val, dtype=dtype), step)
        return infos

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release (no sub-processes)."""
        self.template.close()


__all__ = ["DeadlineWelfareVectorEnv"]
