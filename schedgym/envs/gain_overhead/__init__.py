"""GainOverhead-v0 (OgaSched problem), one module per layer: :mod:`.types` (instance and
parameters) -> :mod:`.generator` (scenarios, synthetic generator; :mod:`.trace` the trace-driven
scenario) -> :mod:`.actions` (action modes) -> :mod:`.dynamics` (pure reward/projection
functions) -> :mod:`.env` -> :mod:`.viewer`; :mod:`.reference` states one step in plain numpy
(the compiled kernels are tested against it), :mod:`.offline` holds the hindsight optimum and
:mod:`.vector` the native batched env."""

from schedgym.envs.gain_overhead import trace as _trace  # noqa: F401 (registers alibaba-gpu-2023)
from schedgym.envs.gain_overhead.env import GainOverheadEnv
from schedgym.envs.gain_overhead.generator import SCENARIOS, generate
from schedgym.envs.gain_overhead.types import GainOverheadInstance, GainOverheadParams

#: The Gymnasium id of the env (registered by ``import schedgym``).
ENV_ID = "schedgym/GainOverhead-v0"

__all__ = ["ENV_ID", "GainOverheadEnv", "GainOverheadInstance", "GainOverheadParams",
           "SCENARIOS", "generate"]
