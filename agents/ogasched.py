"""OgaSched: online gradient ascent with projection onto the feasible set (spec ogasched §3).

In every slot the agent plays an allocation ``y(t)``, observes the arrivals ``x(t)`` and takes a
supergradient step ``y(t+1) = Pi_Y(y(t) + eta_t grad_q(x(t), y(t)))`` (spec (30)-(32)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from schedgym.agents.base import Agent
from schedgym.agents.baselines.gain_overhead import fairness_allocation
from schedgym.core.validation import check_choice, check_float, check_int
from schedgym.envs.gain_overhead import dynamics


class OgaSched(Agent):
    """The OgaSched online learner for ``schedgym/GainOverhead-v0``.

    Args:
        env: the env (the agent reads ``env.unwrapped.instance`` and ``horizon``).
        timing: ``"oco"`` (default) — the paper's online-convex-optimisation protocol covered by
            Theorem 1: the allocation for slot ``t`` is fixed before ``x(t)`` is looked at and
            ``x(t)`` is used only for the gradient step after acting (``y(1) = 0``: "not boosted").
            ``"lookahead"`` — the authors' code: observe ``x(t)``, step from ``y(t-1)``, project,
            zero every type without an arrival, play that; ``y(1) = Fairness(x(1))``.
        projection: ``"exact"`` (default, the Euclidean projection of spec §3.4.2) or ``"paper"``
            (the paper's procedure §3.4.1, an ablation: it can leave the allocation infeasible, in
            which case the env projects it exactly before scoring and reports the distance).
        lr_schedule: ``"exp"`` (default, Alg. 1: ``eta_t = eta0 * decay**(t-1)``),
            ``"theory_const"``
            (``eta = D / (G sqrt(T))``, the step of Theorem 1), ``"theory_adaptive"`` (spec (50):
            ``eta_t = D / (||grad_t|| sqrt(T))``, update skipped when the gradient is 0).
        eta0: initial learning rate (paper 25). decay: per-slot multiplier ``lambda`` (0.9999).
        horizon: ``T`` for the theory schedules (default: the env's horizon).
    """

    name = "ogasched"

    def __init__(
        self,
        env: Any,
        timing: str = "oco",
        projection: str = "exact",
        lr_schedule: str = "exp",
        eta0: float = 25.0,
        decay: float = 0.9999,
        horizon: int | None = None,
    ) -> None:
        super().__init__(env)
        self.timing = check_choice("timing", timing, ("oco", "lookahead"))
        self.projection = check_choice("projection", projection, ("exact", "paper"))
        self.lr_schedule = check_choice(
            "lr_schedule", lr_schedule, ("exp", "theory_const", "theory_adaptive")
        )
        self.eta0 = check_float("eta0", eta0, low=0.0, low_open=True)
        self.decay = check_float("decay", decay, low=0.0, low_open=True)
        T = horizon if horizon is not None else getattr(self.env, "horizon", None)
        self.horizon = check_int("horizon", T, min_value=1)
        inst = self.instance
        self._D = inst.diameter_bound()
        self._G = inst.gradient_bound()
        self._shape = (inst.n_edges, inst.n_resources)
        # Under arrivals="hidden" the observation carries x(t-1), so the "oco" step with it is
        # taken before playing: the step sizes and the played sequence match "revealed".
        self._hidden = getattr(self.env, "arrivals_protocol", "revealed") == "hidden"
        #: The step size does not depend on the gradient and the projection is the exact one:
        #: the update is one compiled call (:func:`.dynamics.ascent_step`).
        self._one_call = self.lr_schedule != "theory_adaptive" and self.projection == "exact"

    def _init_state(self, index: int) -> dict[str, Any]:
        return {"y": None, "eta": self.eta0, "t": 0}

    def step_size(self, state: dict[str, Any], grad: np.ndarray | None) -> float:
        """Learning rate for the update after the current slot (``grad`` is read by
        ``"theory_adaptive"`` only)."""
        if self.lr_schedule == "exp":
            return state["eta"]
        if self.lr_schedule == "theory_const":
            return self._D / (self._G * np.sqrt(self.horizon)) if self._G > 0 else 0.0
        norm = float(np.linalg.norm(grad)) if grad is not None else 0.0
        return self._D / (norm * np.sqrt(self.horizon)) if norm > 0 else 0.0

    def _ascend(self, x: np.ndarray, y: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        """``Pi_Y(y + eta_t grad)``, or ``y`` itself (a copy) when the step size is 0."""
        inst = self.instance
        if self._one_call:
            eta = self.step_size(state, None)  # does not depend on the gradient
            return dynamics.ascent_step(inst, x, y, eta) if eta > 0 else y.copy()
        grad = dynamics.supergradient(inst, x, y)
        eta = self.step_size(state, grad)
        return dynamics.project(inst, y + eta * grad, self.projection) if eta > 0 else y.copy()

    def _act(self, obs: dict[str, np.ndarray], state: dict[str, Any], deterministic: bool):
        inst = self.instance
        x = np.asarray(obs["arrivals"], dtype=np.float64)
        if self.timing == "oco":
            y = state["y"] if state["y"] is not None else np.zeros(self._shape)
            if self._hidden:  # obs carries x(t-1): step with it first (none at the first slot)
                if state["t"] > 0:
                    y = self._ascend(x, y, state)
                    state["eta"] *= self.decay
                state["y"] = played = y
            else:  # obs carries x(t): play y(t), then step with x(t)
                played = y
                state["y"] = self._ascend(x, y, state)
                state["eta"] *= self.decay
            state["t"] += 1
            return self.env.encode_action(played)
        if state["y"] is None:  # lookahead (authors' code)
            played = fairness_allocation(inst, x)
        else:
            played = self._ascend(x, state["y"], state)
            played[x[inst.edge_type] == 0] = 0.0
        state["y"] = played
        state["eta"] *= self.decay
        state["t"] += 1
        return self.env.encode_action(played)
