"""schedgym: Gymnasium environments for online scheduling of multi-server jobs.

Importing the package registers three environment ids with Gymnasium (docs/envs/ has each one's
reference):

- ``schedgym/GainOverhead-v0`` (OgaSched, Zhao et al.): one time slot per step, continuous
  multi-resource allocation over the locality graph, reward = gain - overhead;
- ``schedgym/FluctuatingSpeed-v0`` (ESDP): one time slot per step, binary channel selection on
  servers whose speeds fluctuate, reward = observed net utility;
- ``schedgym/DeadlineWelfare-v0`` (OnSocMax): one job arrival per step, workload dispatched over
  the (node, slot) mesh before the job's deadline, reward = social welfare.

A process that has not imported schedgym (a ``SubprocVecEnv`` or spawn-based ``AsyncVectorEnv``
worker started from ``python -c``, a REPL or a notebook) resolves the ids through Gymnasium's
module prefix, which imports schedgym first::

    gym.make("schedgym:schedgym/GainOverhead-v0")
    make_vec_env("schedgym:schedgym/GainOverhead-v0", n_envs=4, vec_env_cls=SubprocVecEnv)

(Gymnasium 1.x has no plugin entry points that would import a package on its own.)
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

from gymnasium.envs.registration import register, registry

# Imported before any kernel module is: numba's cache stamped by every kernel source, and a
# one-line notice on a terminal when this process starts compiling the kernels.
from schedgym import _compile_notice, _numba_cache  # noqa: F401

try:
    __version__ = _dist_version("schedgym")
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0.1.0"

_ENVS = {
    "schedgym/GainOverhead-v0": "schedgym.envs.gain_overhead.env:GainOverheadEnv",
    "schedgym/DeadlineWelfare-v0": "schedgym.envs.deadline_welfare.env:DeadlineWelfareEnv",
    "schedgym/FluctuatingSpeed-v0": "schedgym.envs.fluctuating_speed.env:FluctuatingSpeedEnv",
}

#: Native batched implementations, for
#: ``gym.make_vec(..., vectorization_mode="vector_entry_point")``.
_VECTOR = {
    "schedgym/GainOverhead-v0": "schedgym.envs.gain_overhead.vector:GainOverheadVectorEnv",
    "schedgym/FluctuatingSpeed-v0":
        "schedgym.envs.fluctuating_speed.vector:FluctuatingSpeedVectorEnv",
    "schedgym/DeadlineWelfare-v0":
        "schedgym.envs.deadline_welfare.vector:DeadlineWelfareVectorEnv",
}

for _id, _entry in _ENVS.items():
    if _id not in registry:
        register(id=_id, entry_point=_entry, vector_entry_point=_VECTOR.get(_id),
                 disable_env_checker=False)

ENV_IDS: tuple[str, ...] = tuple(_ENVS)

__all__ = ["ENV_IDS", "__version__"]
