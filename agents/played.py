"""A saved model played as an agent: its policy's mode or its sampled actions, as its record
or its spec says.

``compare`` and the sweeps play every agent through ``predict(..., deterministic=True)``. For a
learned policy that is its distribution's mode. Where a policy learned to rely on its own
action noise (a bandit, where the noise is how it explores), the mode can play much worse than
the policy that was trained, so the play is part of the model's record: chosen at training
(``--eval-draws``: the evaluations, and ``best_model.zip``, judged the sampled actions),
written into ``run.json`` and the zip, and played by ``ALGO:model.zip`` unless
``[deterministic=...]`` says otherwise. The draws come from torch's generator, seeded with the
episode seed at every episode start (:meth:`PlayedPolicy.seed_episode`, called by the episode
runner), so an episode is reproducible like every other agent's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Where a learned agent's play came from: its spec's ``deterministic``, the model's record,
#: or neither (the mode).
PLAY_SOURCES = ("spec", "recorded", "default")


class PlayedPolicy:
    """``policy`` (anything with SB3's ``predict``: a rebuilt policy, or a loaded model)
    played as ``play`` says: ``"mode"`` (deterministic) or ``"sampled"`` (drawn actions),
    whatever a caller's ``deterministic`` asks. ``source``: where the play came from
    (:data:`PLAY_SOURCES`)."""

    def __init__(self, policy: Any, play: str, source: str = "default") -> None:
        if play not in ("mode", "sampled"):
            raise ValueError(f"play={play!r} is invalid: must be mode or sampled")
        if source not in PLAY_SOURCES:
            raise ValueError(f"source={source!r} is invalid: must be one of "
                             f"{', '.join(PLAY_SOURCES)}")
        self.policy = policy
        self.play = play
        self.source = source

    @property
    def model(self) -> Any:
        """The played policy or model (what :meth:`predict` calls)."""
        return self.policy

    @property
    def observation_space(self) -> Any:
        return self.policy.observation_space

    @property
    def action_space(self) -> Any:
        return self.policy.action_space

    @property
    def play_label(self) -> str:
        """The play in words for a table: ``mode`` or ``sampled``, with ``(recorded)`` when it
        is the model's record's."""
        return self.play + (" (recorded)" if self.source == "recorded" else "")

    def seed_episode(self, seed: int) -> None:
        """Seed the generator the action draws come from (torch's global one) with ``seed``
        (no effect on the mode, which draws nothing)."""
        import torch

        torch.manual_seed(int(seed))

    def predict(self, observation: Any, state: Any = None, episode_start: np.ndarray | None = None,
                deterministic: bool = True) -> tuple[np.ndarray, Any]:
        """The policy's ``predict`` with ``deterministic`` set by the play, whatever the caller
        asks (the spec or the record chose)."""
        return self.policy.predict(observation, state=state, episode_start=episode_start,
                                   deterministic=self.play == "mode")

