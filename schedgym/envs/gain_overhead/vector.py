"""Native batched GainOverhead-v0: N copies of one instance stepped with one numpy pass.

``gym.make_vec("schedgym/GainOverhead-v0", num_envs=N, vectorization_mode="vector_entry_point",
**kwargs)`` builds it. All copies share the instance (same ``scenario``/``instance_seed``/
overrides); each has its own episode seed. Results equal N single envs: ``reset(seed=s)`` seeds
copy ``i`` with ``s + i`` (as ``SyncVectorEnv`` does), and autoreset follows Gymnasium's default
``NEXT_STEP`` mode (the step after an episode ends resets that copy, ignores its action and
returns reward 0). The projection runs over all N x R x K (instance, resource) groups at once,
which is where the speed-up over ``SyncVectorEnv`` comes from.

``infos`` holds, per key, an array over copies (and a boolean ``_key`` mask, Gymnasium's
convention): ``gain``, ``penalty``, ``projection_distance``, ``action_clip``, ``utilization``,
``slot`` ``(N,)``, ``arrivals`` ``(N, L)`` and ``allocation`` ``(N, |E|, K)``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from schedgym.core import rng as rngs
from schedgym.core.projection import project_columns
from schedgym.core.utilities import value as utility_value
from schedgym.core.validation import check_int
from schedgym.envs.gain_overhead.env import GainOverheadEnv


class GainOverheadVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` GainOverhead-v0 copies of one instance; see the module docstring."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        self.num_envs = check_int("num_envs", num_envs, min_value=1)
        kwargs.pop("render_mode", None)
        self.template = GainOverheadEnv(**kwargs)  # validates everything, builds the instance
        t = self.template
        inst = t.instance
        self.instance = inst
        self.horizon = t.horizon
        self.single_observation_space = t.observation_space
        self.single_action_space = t.action_space
        self.observation_space = batch_space(t.observation_space, self.num_envs)
        self.action_space = batch_space(t.action_space, self.num_envs)
        N = self.num_envs
        self._half_upper = 0.5 * inst.edge_caps.reshape(-1)
        self._caps_t = np.ascontiguousarray(np.tile(inst.group_caps, N))  # (D, N*R*K)
        self._cap_t = np.tile(inst.capacities.ravel(), N)
        self._n_pos = max(int((inst.capacities > 0).sum()), 1)
        self._np_randoms: list[np.random.Generator | None] = [None] * N
        self._arrivals = np.zeros((N, self.horizon, inst.n_types))
        self._t = np.zeros(N, dtype=np.int64)
        self._util = np.zeros((N, inst.n_instances * inst.n_resources))
        self._autoreset = np.zeros(N, dtype=bool)

    # ------------------------------------------------------------------ seeds
    def _reset_one(self, i: int, seed: int | None) -> None:
        if seed is not None:
            self._np_randoms[i], _ = seeding.np_random(seed)
            ep = int(seed)
        else:
            if self._np_randoms[i] is None:
                self._np_randoms[i], _ = seeding.np_random()
            ep = rngs.episode_seed(self._np_randoms[i])
        self._arrivals[i] = self.template._sample_arrivals(rngs.stream(ep, "arrivals"),
                                                           self.horizon)
        self._t[i] = 0
        self._util[i] = 0.0

    def _obs(self) -> dict[str, np.ndarray]:
        N = self.num_envs
        idx = np.minimum(self._t, self.horizon - 1)
        x = self._arrivals[np.arange(N), idx] * (self._t < self.horizon)[:, None]
        return {
            "arrivals": x.astype(np.float32),
            "utilization": self._util.astype(np.float32),
            "progress": (self._t / self.horizon).astype(np.float32)[:, None],
        }

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict | None = None):
        N = self.num_envs
        if seed is None or isinstance(seed, (int, np.integer)):
            seeds = [None if seed is None else int(seed) + i for i in range(N)]
        else:
            if len(seed) != N:
                raise ValueError(f"seed has {len(seed)} entries: must have num_envs={N}")
            seeds = list(seed)
        for i, s in enumerate(seeds):
            self._reset_one(i, s)
        self._autoreset[:] = False
        x0 = self._arrivals[:, 0].copy()
        return self._obs(), {"arrivals": x0, "_arrivals": np.ones(N, dtype=bool),
                             "slot": np.zeros(N, dtype=np.int64), "_slot": np.ones(N, dtype=bool)}

    # ------------------------------------------------------------------- step
    def step(self, actions: np.ndarray):
        inst = self.instance
        N, E, K = self.num_envs, inst.n_edges, inst.n_resources
        try:
            a = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("actions is invalid: expected a numeric array") from None
        if a.shape != (N, E * K):
            raise ValueError(f"actions has shape {a.shape}: must have shape ({N}, {E * K})")
        if not (np.isfinite(a.min()) and np.isfinite(a.max())):
            i, j = np.argwhere(~np.isfinite(a))[0]
            raise ValueError(f"actions contains a non-finite entry (env {i}, index {j}: "
                             f"{a[i, j]!r}): every entry must be finite")
        clipped = np.clip(a, -1.0, 1.0)
        clip = np.abs(clipped - a).max(axis=1)
        z = (clipped + 1.0) * self._half_upper  # (N, E*K)

        D, RK = inst.group_gather.shape
        zt = np.ascontiguousarray(z[:, inst.group_gather].transpose(1, 0, 2).reshape(D, N * RK))
        vt = project_columns(zt, self._caps_t, self._cap_t)  # (D, N*RK)
        v3 = vt.reshape(D, N, RK)
        y = v3.transpose(1, 0, 2).reshape(N, D * RK)[:, inst.group_scatter]  # (N, E*K)
        dist = np.linalg.norm(y - z, axis=1)
        y = y.reshape(N, E, K)
        load = v3.sum(axis=0).reshape(N, inst.n_instances, K)
        util = np.minimum(load * inst.inverse_capacities, 1.0)

        rows = np.arange(N)
        x = self._arrivals[rows, np.minimum(self._t, self.horizon - 1)]
        codes = inst.single_family if inst.single_family is not None else inst.edge_codes
        f = utility_value(codes, inst.edge_alpha, y, inst.reciprocal_scale).sum(axis=2)
        type_gain = np.add.reduceat(f, inst.type_starts, axis=1)  # (N, L)
        weighted = np.add.reduceat(y, inst.type_starts, axis=1) * inst.beta  # (N, L, K)
        type_pen = weighted.max(axis=2)
        gain = (x * type_gain).sum(axis=1)
        penalty = (x * type_pen).sum(axis=1)
        rewards = gain - penalty

        # NEXT_STEP autoreset: copies that ended last step are reset and ignore their action.
        resetting = self._autoreset.copy()
        live = ~resetting
        self._util[live] = util.reshape(N, -1)[live]
        self._t[live] += 1
        truncated = live & (self._t >= self.horizon)
        for i in np.flatnonzero(resetting):
            self._reset_one(i, None)
        rewards = np.where(live, rewards, 0.0)
        self._autoreset = truncated.copy()
        terminated = np.zeros(N, dtype=bool)
        m = live
        infos = {
            "gain": np.where(live, gain, 0.0), "penalty": np.where(live, penalty, 0.0),
            "allocation": y, "arrivals": x, "projection_distance": dist, "action_clip": clip,
            "utilization": util.reshape(N, -1).sum(axis=1) / self._n_pos,
            "slot": self._t - 1,
        }
        infos.update({f"_{k}": m for k in list(infos)})
        return self._obs(), rewards, terminated, truncated, infos
