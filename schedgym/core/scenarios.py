"""A small registry of named scenarios (parameter presets) shared by every environment.

Each problem keeps one :class:`ScenarioRegistry`. A scenario is either a dict of parameter values
layered on the problem's defaults, or a *builder*: a callable ``(params, instance_seed) ->
instance`` that makes the instance some other way (e.g. from a trace). Users pass
``scenario=NAME`` plus keyword overrides; unknown names and unknown parameters raise a
``ValueError`` that lists what is allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from schedgym.core.validation import check_known_keys


@dataclass
class Scenario:
    name: str
    params: dict[str, Any]
    description: str = ""
    builder: Callable[..., Any] | None = None


@dataclass
class ScenarioRegistry:
    """Named presets for one problem; ``defaults`` lists every tunable parameter."""

    problem: str
    defaults: dict[str, Any]
    scenarios: dict[str, Scenario] = field(default_factory=dict)

    def register(
        self,
        name: str,
        params: Mapping[str, Any] | None = None,
        description: str = "",
        builder: Callable[..., Any] | None = None,
        extra_params: Mapping[str, Any] | None = None,
    ) -> None:
        """Add a scenario. ``extra_params`` declares parameters only this scenario understands."""
        params = dict(params or {})
        check_known_keys(f"scenario {name!r}", params, self.defaults)
        self.scenarios[name] = Scenario(name, {**params, **dict(extra_params or {})},
                                        description, builder)

    def names(self) -> list[str]:
        return list(self.scenarios)

    def resolve(self, name: str, overrides: Mapping[str, Any]) -> tuple[Scenario, dict[str, Any]]:
        """Return the scenario and its full parameter dict with ``overrides`` applied."""
        if name not in self.scenarios:
            raise ValueError(
                f"scenario={name!r} is invalid: must be one of "
                + ", ".join(repr(n) for n in self.scenarios)
            )
        sc = self.scenarios[name]
        params = {**self.defaults, **sc.params}
        check_known_keys(f"{self.problem} scenario {name!r}", overrides, params)
        params.update(overrides)
        return sc, params
