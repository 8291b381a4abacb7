"""Native batched GainOverhead-v0: N copies of one instance stepped with one compiled pass.

``gym.make_vec("schedgym/GainOverhead-v0", num_envs=N, vectorization_mode="vector_entry_point",
**kwargs)`` builds it; every keyword of the single env works (``scenario``, ``instance_seed``,
overrides, ``action_mode``, ``arrivals``, ``instance_features``, ``obs_mode``, ``render_mode``;
with ``obs_mode="entities"`` the batch of flat observations is encoded by the single env's
:class:`.entities.EntityEncoder` in one batched call, row for row the single env's). It is a
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
copies of one); resets go through them (seeding, the arrival draw, the reset info), so a reset
copy is the single env's own. A step is batched: the state of every copy lives in arrays of the
vector env (slot ``t`` ``(N,)``, utilization ``(N, R * K)``, the episodes' arrivals ``(N, T + 2,
L)`` with a zero row before and after, whose middle rows the copies' ``_arrivals`` are views of);
the step of all copies is one compiled call, :func:`.dynamics.step_batch` (the single env's
step for a batch: the ``"allocation"`` decode with its finite check, the projection, the reward
and the float32 utilization with its sum; float32 actions are read as they are; the learnable
modes check and clip the batch first (:mod:`.batch_actions`), decode with
:func:`.actions.decode_batch` and pass the targets), and the observations are a few array
operations over all copies.
``envs`` and ``render()`` bring the copies' slot and utilization up to date before handing them
out.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from schedgym.core.validation import check_int
from schedgym.envs.gain_overhead import actions, batch_actions, dynamics
from schedgym.envs.gain_overhead.env import GainOverheadEnv

#: The per-copy info keys of a step (each with its ``_key`` mask).
STEP_INFO_KEYS: tuple[str, ...] = ("gain", "penalty", "allocation", "slot_arrivals",
                                   "projection_distance", "action_clip", "mean_utilization",
                                   "slot")
#: Their mask keys, in the same order.
_MASK_KEYS: tuple[str, ...] = tuple(f"_{key}" for key in STEP_INFO_KEYS)


class GainOverheadVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` GainOverhead-v0 copies of one instance; see the module docstring."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP,
                "render_modes": GainOverheadEnv.metadata["render_modes"]}

    def __init__(self, num_envs: int = 1, render_mode: str | None = None, **kwargs: Any) -> None:
        self.num_envs = check_int("num_envs", num_envs, min_value=1)
        first = GainOverheadEnv(render_mode=render_mode, **kwargs)  # validates everything
        self._envs: list[GainOverheadEnv] = [first] + [copy.copy(first)
                                                       for _ in range(self.num_envs - 1)]
        self.render_mode = first.render_mode
        self.metadata = {**self.metadata,
                         "action_modes": first.metadata.get("action_modes", ("allocation",)),
                         "obs_modes": first.metadata["obs_modes"],
                         "entity_action": first.metadata["entity_action"]}
        self.instance = inst = first.instance
        self.horizon = first.horizon
        self.action_mode: str = getattr(first, "action_mode", "allocation")
        self.arrivals_protocol: str = first.arrivals_protocol
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(first.observation_space, self.num_envs)
        self.action_space = batch_space(first.action_space, self.num_envs)
        self._n_action = int(first.action_space.shape[0])  # type: ignore[index]
        self._n_pos = max(int((inst.capacities > 0).sum()), 1)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._rows = np.arange(self.num_envs)
        # Row ``s + 1`` of a copy's padded arrivals is slot ``s``; rows 0 and T + 1 are zeros.
        self._padded = np.zeros((self.num_envs, self.horizon + 2, inst.n_types))
        #: ``_padded`` as one table of rows (a view), and each copy's first row in it: row ``s
        #: + 1`` of copy ``i`` is ``_rows_flat[_row_base[i] + s + 1]`` (``take`` of a table is
        #: faster than a 2-D fancy index).
        self._rows_flat = self._padded.reshape(-1, inst.n_types)
        #: ``_rows_flat`` as float32 (the observations' arrivals), renewed with each reset copy.
        self._rows_flat32 = np.zeros(self._rows_flat.shape, dtype=np.float32)
        self._row_base = np.arange(self.num_envs) * (self.horizon + 2)
        #: ``progress`` of slot ``t`` (``t / T`` as float32), for every ``t`` in ``[0, T]``.
        self._progress = (np.arange(self.horizon + 1) / self.horizon).astype(np.float32)
        #: Padded row of the observed arrivals at slot t: t + 1 (revealed, x(t)) or t (hidden).
        self._obs_shift = 1 if self.arrivals_protocol == "revealed" else 0
        self._t = np.zeros(self.num_envs, dtype=np.int64)
        self._util = np.zeros((self.num_envs, inst.n_instances * inst.n_resources))
        #: ``_util`` as float32: the next observation's (a new array each step and reset).
        self._util32 = np.zeros(self._util.shape, dtype=np.float32)
        self._features = first.instance_feature_values
        self._obs_keys: tuple[str, ...] = tuple(first.flat_space.keys())
        #: The single env's entity encoder (``obs_mode="entities"``), else None.
        self._entities = first.entity_encoder
        self._ceiling = first.price_ceiling
        self._needs_reset = True

    @property
    def envs(self) -> list[GainOverheadEnv]:
        """The copies (single envs), with their slot and utilization brought up to date."""
        for i, env in enumerate(self._envs):
            env.sync_state(int(self._t[i]), self._util[i])
        return self._envs

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
            infos = self._reset_copy(int(i), infos, seed=seeds[i], options=options)
        self._util32 = self._util.astype(np.float32)
        self._autoreset[mask] = False
        self._needs_reset = False
        return self._observations(), infos

    def _reset_copy(self, i: int, infos: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Reset copy ``i`` through its single env (``kwargs``: ``seed``, ``options``), take its
        new episode into the batch state and merge its reset info into ``infos`` (the caller
        renews ``_util32``)."""
        env = self._envs[i]
        _, info = env.reset(**kwargs)
        env.share_arrivals(self._padded[i, 1:-1])
        rows = slice(self._row_base[i], self._row_base[i] + self.horizon + 2)
        self._rows_flat32[rows] = self._rows_flat[rows]
        self._t[i] = 0
        self._util[i] = 0.0
        return self._add_info(infos, info, i)

    def _observations(self) -> dict[str, np.ndarray]:
        """The batched observation of every copy from the batch state (fresh arrays: the float32
        utilization is made anew by every step and reset, and handed out once), in the
        observation space's key order; each row is the single env's ``_obs()``."""
        t = self._t
        values = {
            "arrivals": self._rows_flat32.take(self._row_base + t + self._obs_shift, axis=0),
            "utilization": self._util32,
            "progress": self._progress.take(t)[:, None],
        }
        if self._features is not None:
            values["instance"] = np.tile(self._features, (self.num_envs, 1))
        if self._entities is not None:
            return self._entities.encode_batch(values)
        return {key: values[key] for key in self._obs_keys}

    # ------------------------------------------------------------------- step
    def _as_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as a C-contiguous float32 or float64 array ``(N, n)`` (other dtypes are
        converted to float64; float32 widens exactly inside the kernels)."""
        N, n = self.num_envs, self._n_action
        a = actions
        if not (isinstance(a, np.ndarray) and a.dtype in (np.float32, np.float64)):
            try:
                a = np.asarray(actions, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError("actions is invalid: expected a numeric array of shape "
                                 f"({N}, {n})") from None
        if a.shape != (N, n):
            raise ValueError(f"actions has shape {a.shape}: must have shape ({N}, {n})")
        return np.ascontiguousarray(a)

    def _check_finite(self, a: np.ndarray, live: np.ndarray) -> None:
        """Raise for the first NaN/inf entry of the acting copies' rows ``a[live]`` (one
        vectorised test of the whole batch first; a non-finite action of a copy being reset is
        ignored, as ``SyncVectorEnv`` ignores that action)."""
        if dynamics.all_finite(a):
            return
        bad = int(batch_actions.first_nonfinite(a, live))
        if bad >= 0:
            i, j = divmod(bad, self._n_action)
            raise ValueError(f"actions contains a non-finite entry (env {i}, index {j}: "
                             f"{np.float64(a[i, j])!r}): every entry must be finite")

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """One slot for every copy (NEXT_STEP autoreset); see the module docstring."""
        if self._needs_reset:
            raise gym.error.ResetNeeded(
                f"{type(self).__name__}.step() was called before reset(): call reset() first")
        N = self.num_envs
        resetting = self._autoreset
        a = self._as_actions(actions)
        if not resetting.any():
            rewards, truncated, infos = self._step_every(a)
            self._autoreset = truncated.copy()
            return self._observations(), rewards, np.zeros(N, dtype=bool), truncated, infos
        rewards = np.zeros(N)
        truncated = np.zeros(N, dtype=bool)
        infos = {}
        live = np.flatnonzero(~resetting)
        if live.size:
            infos = self._step_live(live, a, rewards, truncated)
        for i in np.flatnonzero(resetting):
            infos = self._reset_copy(int(i), infos)
        self._util32 = self._util.astype(np.float32)
        self._autoreset = truncated.copy()
        return self._observations(), rewards, np.zeros(N, dtype=bool), truncated, infos

    def _score(self, live: np.ndarray, a: np.ndarray, x: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Step the copies ``live`` with actions ``a[live]`` against their arrivals ``x``: the
        single env's decode of its mode (inside the step kernel in the ``"allocation"`` mode,
        :func:`.actions.decode_batch` in the learnable ones), then the projection and score of
        all of them in one compiled call (:func:`.dynamics.step_batch`, the single env's
        kernel); returns ``(y, utilization, its float32 copy, stats)`` as that function
        does. Raises ``ValueError`` for a NaN/inf entry (the ``"allocation"`` decode checks in
        its own pass)."""
        inst = self.instance
        if self.action_mode == "allocation":
            bad, y, util, util32, stats = dynamics.step_batch(inst, a, live, x, True)
            if bad >= 0:
                self._check_finite(a, live)  # raises, naming the first bad entry
            return y, util, util32, stats
        self._check_finite(a, live)
        clipped, clip = np.empty((live.size, self._n_action)), np.empty(live.size)
        batch_actions.clip_rows(a, live, clipped, clip)
        served = x > 0 if self.arrivals_protocol == "revealed" else None  # observed = x(t)
        z = actions.decode_batch(inst, self.action_mode, clipped, self._ceiling, served)
        _, y, util, util32, stats = dynamics.step_batch(
            inst, z.reshape(live.size, -1), np.arange(live.size), x, False)
        stats[:, dynamics.STAT_CLIP] = clip
        return y, util, util32, stats

    def _step_every(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every copy (none resets): :meth:`_step_live` for all of them, with whole
        arrays (no fancy indexing, no zero filling); returns ``(rewards, truncated, infos)``."""
        slots = self._t.copy()  # int64, as SyncVectorEnv's slot
        x = self._rows_flat.take(self._row_base + slots + 1, axis=0)
        y, util, util32, stats = self._score(self._rows, a, x)
        self._t += 1
        self._util, self._util32 = util, util32  # the next observation's
        masks = np.ones((len(STEP_INFO_KEYS), self.num_envs), dtype=bool)  # a row per key
        infos: dict[str, Any] = {}
        for key, mask_key, value, mask in zip(STEP_INFO_KEYS, _MASK_KEYS,
                                              self._info_values(y, x, stats, slots), masks,
                                              strict=True):
            infos[key], infos[mask_key] = value, mask
        return _reward(stats), self._t >= self.horizon, infos

    def _info_values(self, y: np.ndarray, x: np.ndarray, stats: np.ndarray, slots: np.ndarray
                     ) -> tuple[np.ndarray, ...]:
        """The stepped copies' info values in :data:`STEP_INFO_KEYS` order, from the outputs
        of :meth:`_score` (``stats`` columns: distance, gain, penalty, clip, utilization sum)."""
        return (stats[:, dynamics.STAT_GAIN], stats[:, dynamics.STAT_PENALTY], y, x,
                stats[:, dynamics.STAT_DISTANCE], stats[:, dynamics.STAT_CLIP],
                stats[:, dynamics.STAT_USED] / self._n_pos, slots)

    def _step_live(self, live: np.ndarray, a: np.ndarray, rewards: np.ndarray,
                   truncated: np.ndarray) -> dict[str, Any]:
        """Step the copies ``live`` (some copies reset) with actions ``a[live]``; fills
        ``rewards``/``truncated`` and returns their infos (zeros and a False mask elsewhere, as
        Gymnasium's ``_add_info`` leaves them); step() renews ``_util32`` after the resets."""
        N = self.num_envs
        slots = self._t[live]  # int64, as SyncVectorEnv's slot
        x = self._rows_flat.take(self._row_base[live] + slots + 1, axis=0)
        y, util, util32, stats = self._score(live, a, x)
        self._t[live] = slots + 1
        self._util[live] = util
        truncated[live] = slots + 1 >= self.horizon
        rewards[live] = _reward(stats)
        mask = np.zeros(N, dtype=bool)
        mask[live] = True
        infos: dict[str, Any] = {}
        for key, mask_key, v in zip(STEP_INFO_KEYS, _MASK_KEYS,
                                    self._info_values(y, x, stats, slots), strict=True):
            full = np.zeros((N, *v.shape[1:]), dtype=v.dtype)
            full[live] = v
            infos[key], infos[mask_key] = full, mask.copy()
        return infos

    def render(self) -> tuple[Any, ...]:
        """One frame per copy (None each without a ``render_mode``), as ``SyncVectorEnv``."""
        return tuple(env.render() for env in self.envs)


def _reward(stats: np.ndarray) -> np.ndarray:
    """``gain - penalty`` of every copy of a step's ``stats`` ``(n, 5)``."""
    return stats[:, dynamics.STAT_GAIN] - stats[:, dynamics.STAT_PENALTY]
