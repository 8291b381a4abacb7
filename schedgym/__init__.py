"""schedgym: Gymnasium environments for online scheduling of multi-server jobs.

Importing the package registers the environment ids with Gymnasium:

- ``schedgym/GainOverhead-v0`` (OgaSched): continuous multi-resource allocation, gain - overhead.
"""

from gymnasium.envs.registration import register, registry

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
