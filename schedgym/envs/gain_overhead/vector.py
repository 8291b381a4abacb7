"""Native batched GainOverhead-v0: N copies of one instance stepped with one compiled pass.

``gym.make_vec("schedgym/GainOverhead-v0", num_envs=N, vectorization_mode="vector_entry_point",
**kwargs)`` builds it; every keyword of the single env works (``scenario``, ``instance_seed``,
overrides, ``action_mode``, ``arrivals``, ``instance_features``, ``render_mode``). It is a
drop-in for ``SyncVectorEnv`` over N single envs with the same kwargs: the same observations,
rewards (bit for bit), terminated/truncated flags and infos, across autoresets too:

- ``reset(seed=s)`` seeds copy ``i`` with ``s + i`` (a list gives one seed per copy),
  ``options={"reset_mask": mask}`` resets only the masked copies, as ``SyncVectorEnv`` does;
- autoreset follows Gymnasium's default ``NEXT_STEP`` mode: the step after a copy's episode
  ends resets that copy, ignores its action, returns reward 0 and the copy's *reset* info
  (``arrivals`` of the new episode's first slot, ``slot`` 0), merged with the other copies'
  step infos under Gymnasium's ``_key`` masks;
- ``infos`` holds, per key, an array over copies and a boolean mask ``_key``: ``gain``,
  ``penalty``, ``projection_distance``, ``action_clip``, ``utilization``, ``slot`` ``(N,)``,
  ``arrivals`` ``(N, L)`` and ``allocation`` ``(N, |E|, K)``;
- ``render()`` returns one frame per copy (a tuple, as ``SyncVectorEnv``) when constructed with
  ``render_mode="ansi"`` or ``"rgb_array"``;
- ``step()`` before ``reset()`` raises ``gymnasium.error.ResetNeeded``.

How: the copies are single :class:`GainOverheadEnv` objects that share the instance (shallow
copies of one), so seeding, arrival draws, decoding (``decode_action``; the default mode's
affine map :func:`schedgym.core.envbase.decode_unit` is applied to the whole batch at once),
observations and reset infos are the single env's own code. The expensive part is batched: the
projection and the reward of all N copies run in one call of :func:`.dynamics.score_batch`, the
compiled kernel the single env's dynamics use as well.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from schedgym.core.envbase import decode_unit
from schedgym.core.validation import check_int
from schedgym.envs.gain_overhead import dynamics
from schedgym.envs.gain_overhead.env import GainOverheadEnv

#: The per-copy info keys of a step (each with its ``_key`` mask).
STEP_INFO_KEYS: tuple[str, ...] = ("gain", "penalty", "allocation", "arrivals",
                                   "projection_distance", "action_clip", "utilization", "slot")


class GainOverheadVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` GainOverhead-v0 copies of one instance; see the module docstring."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP,
                "render_modes": GainOverheadEnv.metadata["render_modes"]}

    def __init__(self, num_envs: int = 1, render_mode: str | None = None, **kwargs: Any) -> None:
        self.num_envs = check_int("num_envs", num_envs, min_value=1)
        first = GainOverheadEnv(render_mode=render_mode, **kwargs)  # validates everything
        self.envs: list[GainOverheadEnv] = [first] + [copy.copy(first)
                                                      for _ in range(self.num_envs - 1)]
        self.render_mode = first.render_mode
        self.metadata = {**self.metadata,
                         "action_modes": first.metadata.get("action_modes", ("allocation",))}
        self.instance = first.instance
        self.horizon = first.horizon
        self.action_mode: str = getattr(first, "action_mode", "allocation")
        self.arrivals_protocol: str = first.arrivals_protocol
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(first.observation_space, self.num_envs)
        self.action_space = batch_space(first.action_space, self.num_envs)
        self._n_action = int(first.action_space.shape[0])  # type: ignore[index]
        self._upper = self.instance.edge_caps.reshape(-1)
        self._n_pos = max(int((self.instance.capacities > 0).sum()), 1)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._env_obs: list[Any] = [None] * self.num_envs
        self._obs: Any = create_empty_array(first.observation_space, n=self.num_envs, fn=np.zeros)
        self._needs_reset = True

    # ------------------------------------------------------------------ reset
    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset every copy (or those of ``options["reset_mask"]``); seeds as ``SyncVectorEnv``."""
        N = self.num_envs
        if seed is None or isinstance(seed, (int, np.integer)):
            seeds = [None if seed is None else int(seed) + i for i in range(N)]
        else:
            seeds = list(seed)
            if len(seeds) != N:
                raise ValueError(f"seed has {len(seeds)} entries: must have num_envs={N}")
        options = dict(options) if options is not None else None
        mask = np.ones(N, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options.pop("reset_mask"))
            if mask.shape != (N,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(f"options['reset_mask'] is invalid: must be a bool array of "
                                 f"shape ({N},) with at least one True, got {mask!r}")
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(mask):
            self._env_obs[i], info = self.envs[i].reset(seed=seeds[i], options=options)
            infos = self._add_info(infos, info, int(i))
        self._autoreset[mask] = False
        self._needs_reset = False
        return self._observations(), infos

    def _observations(self) -> Any:
        self._obs = concatenate(self.single_observation_space, self._env_obs, self._obs)
        return copy.deepcopy(self._obs)

    # ------------------------------------------------------------------- step
    def _validate(self, actions: Any, live: np.ndarray) -> np.ndarray:
        """``actions`` as float64 ``(N, n)``; NaN/inf raise for copies that act this step."""
        N, n = self.num_envs, self._n_action
        try:
            a = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("actions is invalid: expected a numeric array of shape "
                             f"({N}, {n})") from None
        if a.shape != (N, n):
            raise ValueError(f"actions has shape {a.shape}: must have shape ({N}, {n})")
        bad = ~np.isfinite(a) & live[:, None]
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"actions contains a non-finite entry (env {i}, index {j}: "
                             f"{a[i, j]!r}): every entry must be finite")
        return a

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """One slot for every copy (NEXT_STEP autoreset); see the module docstring."""
        if self._needs_reset:
            raise gym.error.ResetNeeded(
                f"{type(self).__name__}.step() was called before reset(): call reset() first")
        N = self.num_envs
        resetting = self._autoreset.copy()
        live = np.flatnonzero(~resetting)
        a = self._validate(actions, ~resetting)
        rewards = np.zeros(N)
        truncated = np.zeros(N, dtype=bool)
        infos: dict[str, Any] = {}
        if live.size:
            infos = self._step_live(live, a, rewards, truncated)
        for i in np.flatnonzero(resetting):
            self._env_obs[i], info = self.envs[i].reset()
            infos = self._add_info(infos, info, int(i))
        self._autoreset = truncated.copy()
        return self._observations(), rewards, np.zeros(N, dtype=bool), truncated, infos

    def _step_live(self, live: np.ndarray, a: np.ndarray, rewards: np.ndarray,
                   truncated: np.ndarray) -> dict[str, Any]:
        """Step the copies ``live`` with actions ``a[live]``; fills ``rewards``/``truncated``
        and returns their infos (zeros and a False mask elsewhere)."""
        N, inst = self.num_envs, self.instance
        clipped = np.clip(a[live], -1.0, 1.0)
        clip = np.abs(clipped - a[live]).max(axis=1)
        envs = [self.envs[i] for i in live]
        if self.action_mode == "allocation":  # the affine map of the default mode, batched
            z = decode_unit(clipped, self._upper)
        else:  # the env's own decoder, copy by copy (low-dimensional modes)
            z = np.stack([e.decode_action(clipped[j]) for j, e in enumerate(envs)])
        x = np.stack([e._arrivals[e._t] for e in envs])
        out = dynamics.score_batch(inst, z, x)
        util = out.utilization.reshape(live.size, -1)
        slots = np.array([e._t for e in envs], dtype=np.int64)  # int, as the single env's
        for j, e in enumerate(envs):
            e._util, e._last_alloc = util[j], out.y[j]
            e._t += 1
            self._env_obs[live[j]] = e._obs()
        truncated[live] = slots + 1 >= self.horizon
        rewards[live] = out.reward
        values = {"gain": out.gain, "penalty": out.penalty, "allocation": out.y, "arrivals": x,
                  "projection_distance": out.distance, "action_clip": clip,
                  "utilization": util.sum(axis=1) / self._n_pos, "slot": slots}
        mask = np.zeros(N, dtype=bool)
        mask[live] = True
        infos: dict[str, Any] = {}
        for key in STEP_INFO_KEYS:
            v = values[key]
            if live.size < N:  # zeros under a False mask, as Gymnasium's _add_info leaves them
                full = np.zeros((N, *v.shape[1:]), dtype=v.dtype)
                full[live] = v
                v = full
            infos[key], infos[f"_{key}"] = v, mask.copy()
        return infos

    def render(self) -> tuple[Any, ...]:
        """One frame per copy (None each without a ``render_mode``), as ``SyncVectorEnv``."""
        return tuple(env.render() for env in self.envs)
