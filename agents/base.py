"""The agent protocol shared by every classical agent.

Every agent satisfies Stable-Baselines3's ``PolicyPredictor`` protocol::

    action, state = agent.predict(observation, state=None, episode_start=None, deterministic=True)

- ``observation`` is one observation (a dict of 1-D arrays) or a batch (a dict of 2-D arrays with
  the env index first, as a ``DummyVecEnv`` gives); the returned action has the matching shape.
  Where the env is wrapped in ``FlattenObservation``, the flat vector (or a batch of them) is
  accepted too and unflattened with the env's own ``Dict`` space.
- Online learners keep one learning state per env index and reset it where ``episode_start`` is
  true (SB3's ``evaluate_policy`` passes ``episode_start=True`` for every env on the first call).
  A single-observation call with ``episode_start=None`` starts a fresh state on the first call;
  call :meth:`Agent.reset` (or pass ``episode_start=True``) to begin a new episode.
- Agents read the env's static ``instance`` at construction and afterwards learn only from what
  the observation carries, so a run through ``evaluate_policy`` is a faithful online run.
- The env may be a plain env, a wrapped one (``env.unwrapped`` is used), an SB3 ``VecEnv``
  (``venv.envs[0]`` or ``venv.get_attr("unwrapped")``) or a Gymnasium vector env of copies of
  one instance.
- Every observation is checked against the space the agent was built for (keys, shapes, bounds,
  and the instance features when the observation carries them), so another env's or another
  instance's observation is a ``ValueError``, never a plausible-looking action.

Subclasses implement :meth:`Agent._init_state` and :meth:`Agent._act`, working on one unbatched
observation at a time. The returned ``state`` is always ``None``: the learning state lives inside
the agent, keyed by env index, because SB3's evaluation loop expects ``state`` to be a recurrent
hidden state.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from gymnasium import spaces

#: Tolerance of the observation bounds check (float32 rounding of the env's observations).
BOUNDS_TOL = 1e-5


def unwrap_env(env: Any) -> tuple[Any, spaces.Space]:
    """``(base env, observation space the agent is given)`` for a plain, wrapped or vector env.

    The base env is the one holding ``instance`` (``env.unwrapped`` of a single env, of the first
    sub-env of an SB3 ``VecEnv`` or Gymnasium ``SyncVectorEnv``/``AsyncVectorEnv``, or a native
    vector env itself). Raises ``ValueError`` when none is found.
    """
    space: Any = getattr(env, "observation_space", None)
    if hasattr(env, "num_envs"):  # a vector env (SB3 or Gymnasium)
        space = getattr(env, "single_observation_space", space)
        if getattr(env, "envs", None):  # the first copy: a single env with its whole API
            base = env.envs[0].unwrapped
        elif hasattr(env, "instance"):  # a native vector env without single copies
            base = env
        elif hasattr(env, "get_attr"):
            got = env.get_attr("unwrapped", [0]) if _is_sb3_vec(env) else env.get_attr(
                "unwrapped")
            base = got[0]
        else:
            base = env
    else:
        base = getattr(env, "unwrapped", env)
    if not hasattr(base, "instance") or space is None:
        raise ValueError(f"env={type(env).__name__} is invalid for a classical agent: must be a "
                         "schedgym env (with .instance), a wrapper of one, or a vector env of "
                         "copies of one")
    return base, space


def env_id_of(env: Any) -> str | None:
    """The registered Gymnasium id of ``env`` (plain, wrapped or vector; from its ``spec``, else
    its base env's), or None for an env not made by ``gym.make``."""
    spec = getattr(env, "spec", None)
    if spec is None:
        spec = getattr(unwrap_env(env)[0], "spec", None)
    return getattr(spec, "id", None)


def _key_check(key: str, low: np.ndarray, high: np.ndarray
               ) -> tuple[str, tuple[int, ...], Any, Any, bool]:
    """``(key, shape, low - tol, high + tol, infinite bounds?)`` of one Box of the observation;
    the bounds are floats where every entry's is the same, else float64 arrays."""
    lo: Any = low - BOUNDS_TOL
    hi: Any = high + BOUNDS_TOL
    if low.size and lo.min() == lo.max() and hi.min() == hi.max():
        lo, hi = float(lo.flat[0]), float(hi.flat[0])
    infinite = not (np.isfinite(low).all() and np.isfinite(high).all())
    return key, low.shape, lo, hi, infinite


@numba.njit(cache=True)
def _outside(val: np.ndarray, low: float, high: float, need_finite: bool) -> bool:
    """Whether an entry of ``val`` (flat) is outside ``[low, high]`` (compared in float64) or NaN,
    or, with ``need_finite``, infinite; one pass instead of numpy's ``min``/``max``/``isfinite``.
    The pass has no early exit (observations are valid but for bugs), so it is branch-free and
    vectorises."""
    inside = True
    for v in val:
        x = float(v)
        inside &= (x >= low) & (x <= high)  # False for NaN
    if need_finite and inside:
        for v in val:
            inside &= np.isfinite(float(v))
    return not inside


def _is_sb3_vec(env: Any) -> bool:
    return type(env).__module__.startswith("stable_baselines3")


class Agent:
    """Base class of the classical agents; see the module docstring for the protocol."""

    #: Short registry name (``agents.make(name, env)``).
    name: str = "agent"
    #: True if the agent acts in any action mode (it only samples ``action_space``).
    any_action_mode: bool = False

    def __init__(self, env: Any) -> None:
        base, given_space = unwrap_env(env)
        given: Any = given_space
        self.env: Any = base
        self.instance: Any = base.instance
        # a native vector env holds the instance itself: read its per-copy spaces
        self.observation_space: spaces.Dict = getattr(base, "single_observation_space",
                                                      base.observation_space)
        self.action_space: spaces.Space = getattr(base, "single_action_space", base.action_space)
        self._check_action_mode()
        self._flat = isinstance(given, spaces.Box) and isinstance(self.observation_space,
                                                                  spaces.Dict)
        if self._flat and given.shape[-1:] != (spaces.flatdim(self.observation_space),):
            raise ValueError(f"env observation space {given} is invalid for {type(self).__name__}"
                             f": a flattened observation must have "
                             f"{spaces.flatdim(self.observation_space)} entries")
        self._bounds = {k: (np.asarray(s.low, dtype=np.float64),
                            np.asarray(s.high, dtype=np.float64))
                        for k, s in self.observation_space.spaces.items()
                        if isinstance(s, spaces.Box)}
        # per key: scalar bounds where the box's bounds are uniform (then one compiled pass,
        # :func:`_outside`), else the arrays; the check must cost little beside a decision
        self._checks = [_key_check(k, lo, hi) for k, (lo, hi) in self._bounds.items()]
        self._obs_keys = set(self.observation_space.spaces)
        self._obs_first_key = next(iter(self.observation_space.spaces))
        self._obs_first_ndim = len(self.observation_space.spaces[self._obs_first_key].shape or ())
        self._features: np.ndarray | None = None
        self._states: dict[int, Any] = {}

    def _check_action_mode(self) -> None:
        modes = tuple(getattr(self.env, "metadata", {}).get("action_modes", ()))
        mode = getattr(self.env, "action_mode", None)
        if modes and mode is not None and mode != modes[0] and not self.any_action_mode:
            raise ValueError(f"action_mode={mode!r} is invalid for {type(self).__name__}: "
                             f"classical agents act in the default mode {modes[0]!r}; build "
                             f"the env with action_mode={modes[0]!r}")

    # ----------------------------------------------------------- to override
    def _init_state(self, index: int) -> Any:
        """Fresh learning state for env ``index`` (called at every episode start)."""
        return None

    def _act(self, obs: dict[str, np.ndarray], state: Any, deterministic: bool) -> np.ndarray:
        """Action for one unbatched observation (may update ``state`` in place)."""
        raise NotImplementedError

    # --------------------------------------------------------------- public
    def reset(self) -> None:
        """Forget every env's learning state (the next call starts a new episode)."""
        self._states.clear()

    def _split(self, observation: Any) -> tuple[list[dict[str, np.ndarray]], bool]:
        """``(unbatched dict observations, batched?)`` of an observation or a batch."""
        if isinstance(observation, dict):
            obs = {k: np.asarray(v) for k, v in observation.items()}
            self._check_keys(obs)
            key = self._obs_first_key
            batched = obs[key].ndim > self._obs_first_ndim
            if not batched:
                return [obs], False
            n = len(obs[key])
            return [{k: v[i] for k, v in obs.items()} for i in range(n)], True
        if not self._flat:
            raise ValueError(f"observation of type {type(observation).__name__} is invalid: "
                             f"{type(self).__name__} expects a dict with keys "
                             f"{sorted(self.observation_space.spaces)}")
        arr = np.asarray(observation, dtype=np.float64)
        batched = arr.ndim == 2
        rows = list(arr) if batched else [arr]
        dim = spaces.flatdim(self.observation_space)
        if any(r.shape != (dim,) for r in rows):
            raise ValueError(f"observation has shape {arr.shape}: a flattened observation of "
                             f"this env has {dim} entries")
        space: Any = self.observation_space
        return [spaces.unflatten(space, r) for r in rows], batched

    def _check_keys(self, obs: dict[str, np.ndarray]) -> None:
        want = self._obs_keys
        if obs.keys() != want:
            raise ValueError(f"observation keys {sorted(obs)} are invalid: "
                             f"{type(self).__name__} was built for an env whose observations "
                             f"have keys {sorted(want)} (another env's observation?)")

    def check_observation(self, obs: dict[str, np.ndarray]) -> None:
        """Raise ``ValueError`` unless ``obs`` (unbatched) fits the agent's env: shapes, bounds,
        and the same instance features as before when the observation carries them."""
        for key, shape, low, high, infinite in self._checks:
            val = obs[key]
            if type(val) is not np.ndarray:
                val = np.asarray(val)
            if val.shape != shape:
                raise ValueError(f"observation[{key!r}] has shape {val.shape}: this env's has "
                                 f"{shape} (another instance's or env's observation?)")
            if not val.size:
                continue
            if type(low) is float:  # one compiled pass (NaN fails both comparisons)
                bad = _outside(val if val.ndim == 1 else val.reshape(-1), low, high, infinite)
            else:
                bad = not ((val >= low).all() and (val <= high).all()) or (
                    infinite and not np.isfinite(val).all())
            if bad:
                self._raise_out_of_space(obs)
        if "instance" in obs:
            feats = np.asarray(obs["instance"], dtype=np.float64)
            if self._features is None:
                self._features = feats.copy()
            elif not np.array_equal(feats, self._features):
                raise ValueError("observation['instance'] differs from the instance this agent "
                                 "was built for: build one agent per instance")

    def _raise_out_of_space(self, obs: dict[str, np.ndarray]) -> None:
        """Name the first entry outside its space (the slow path of the check)."""
        for key, (low, high) in self._bounds.items():
            val = np.asarray(obs[key], dtype=np.float64)
            if np.any(val < low - BOUNDS_TOL) or np.any(val > high + BOUNDS_TOL) or \
                    not np.all(np.isfinite(val)):
                raise ValueError(f"observation[{key!r}] is outside its space [low, high] (or "
                                 "not finite): is it another instance's or env's observation?")
        raise ValueError("observation is outside its space [low, high] (or not finite): is it "
                         "another instance's or env's observation?")

    def predict(
        self,
        observation: dict[str, np.ndarray] | np.ndarray,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3 ``PolicyPredictor.predict``: action(s) for one observation or a batch."""
        items, batched = self._split(observation)
        n = len(items)
        if episode_start is None:
            starts: Any = (False,) * n
        else:  # one flag per observation, or one for all (broadcast)
            starts = np.asarray(episode_start, dtype=bool).reshape(-1)
            if starts.shape != (n,):
                starts = np.broadcast_to(starts, (n,))
        actions = []
        for i, obs in enumerate(items):
            self.check_observation(obs)
            if starts[i] or i not in self._states:
                self._states[i] = self._init_state(i)
            actions.append(np.asarray(self._act(obs, self._states[i], deterministic)))
        out = np.stack(actions) if batched else actions[0]
        return out, None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
