"""FIXED-PRICE: the same action of a learnable price mode in every step.

The learnable modes of GainOverhead-v0 (``prices``) and DeadlineWelfare-v0 (``pricing``)
decode an action in [-1, 1] into each job's exact best response to prices, so one constant
action is already a complete, strong scheduling rule; the zero action (the mean of a fresh SB3
Gaussian policy) is the starting point every learner in those modes improves on. This agent
names that rule, so it is raced as a classical agent and counts for "the best classical agent":

- GainOverhead-v0, ``action_mode="prices"``: every (type, resource) pair gets the price
  ``p_lk = (price + 1) / 2 * pmax_lk`` (``price = 0``: half of the price at which no channel
  asks for anything) and each channel asks for its own utility's best response
  (:mod:`schedgym.envs.gain_overhead.actions`);
- DeadlineWelfare-v0, ``action_mode="pricing"``: the action ``(a_0, a_1, a_2)`` is a reserve
  price ``v max(0, a_0)``, a congestion slope ``v max(0, a_1)`` and a served fraction ``min(1,
  1 + a_2)`` (:mod:`schedgym.envs.deadline_welfare.actions`); ``price = 0`` is each job's
  myopic welfare maximiser (``myopic-welfare``, played through the decoder).

``price`` is one number in [-1, 1] for every entry of the action, or a tuple with one value per
entry (on the command line ``fixed-price[price=0.2:0:-0.1]`` for DeadlineWelfare's three).
The agent plays in its env's price mode (``schedgym compare`` builds its env so, see
:func:`schedgym.agents.registry.play_kwargs`); built on another mode it raises.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.agents.base import Agent
from schedgym.core.validation import check_float

#: The learnable price mode of each env id this agent plays.
PLAY_MODES: dict[str, str] = {"schedgym/GainOverhead-v0": "prices",
                              "schedgym/DeadlineWelfare-v0": "pricing"}


class FixedPrice(Agent):
    """One constant action of the env's price mode (see the module docstring)."""

    name = "fixed-price"
    #: The action mode it plays in, per env id (read by ``registry.play_kwargs``).
    play_modes = PLAY_MODES

    def __init__(self, env: Any, price: float | tuple[float, ...] = 0.0) -> None:
        super().__init__(env)
        n = int(np.prod(self.action_space.shape or (1,)))
        if isinstance(price, (tuple, list)):
            if len(price) != n:
                raise ValueError(f"price={price!r} is invalid: a tuple must have one value per "
                                 f"action entry ({n} in this env), or give one number")
            values = [check_float(f"price[{i}]", p, low=-1.0, high=1.0)
                      for i, p in enumerate(price)]
        else:
            values = [check_float("price", price, low=-1.0, high=1.0)] * n
        self.price = price
        self._action = np.array(values, dtype=np.float32).reshape(self.action_space.shape)

    def _check_action_mode(self) -> None:
        modes = tuple(getattr(self.env, "metadata", {}).get("action_modes", ()))
        want = next((m for m in PLAY_MODES.values() if m in modes), None)
        if want is None:
            raise ValueError(f"{type(self).__name__} plays the price action mode of "
                             f"{', '.join(PLAY_MODES)}: this env has none (modes {modes})")
        mode = getattr(self.env, "action_mode", None)
        if mode != want:
            raise ValueError(f"action_mode={mode!r} is invalid for {type(self).__name__}: it "
                             f"plays in action_mode={want!r}; build the env with "
                             f"action_mode={want!r} (schedgym compare does so itself)")

    def _act(self, obs: dict[str, np.ndarray], state: Any, deterministic: bool) -> np.ndarray:
        return self._action.copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(price={self.price!r})"
