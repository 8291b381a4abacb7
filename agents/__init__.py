"""Classical online agents for the schedgym environments (SB3 ``predict`` protocol).

``agents.make(name, env, **kw)`` builds any of them by name, and loads saved SB3 models
(``"ppo:path/model.zip"``); see :mod:`schedgym.agents.registry`. An agent spec
(``name[key=value,...]``) is parsed by :class:`~schedgym.agents.spec.AgentSpec`.

The modules, lowest first (each imports only those above it, ``schedgym.core`` and
``schedgym.envs``; none imports ``schedgym.train``):

- :mod:`~schedgym.agents.spec`: the agent spec syntax (imports nothing of schedgym);
- :mod:`~schedgym.agents.base`: the agent protocol and base class of the classical agents;
- :mod:`~schedgym.agents.record`: a trained model's ``run.json``;
- :mod:`~schedgym.agents.played`, :mod:`~schedgym.agents.learned`: a saved SB3 model played as
  an agent, checked against the env;
- the classical agents (``ogasched``, ``esdp``, ``onsocmax``, ``myopic_*``, ``baselines/``);
- :mod:`~schedgym.agents.registry`: every agent by name (the classical ones imported lazily);
  this file registers them.
"""

from schedgym.agents.base import Agent
from schedgym.agents.registry import is_benchmark, make, names, register
from schedgym.agents.spec import AgentSpec

_GO = ("schedgym/GainOverhead-v0",)
register("ogasched", "schedgym.agents.ogasched:OgaSched", _GO)
register("drf", "schedgym.agents.baselines.gain_overhead:DRF", _GO)
register("fairness", "schedgym.agents.baselines.gain_overhead:Fairness", _GO)
register("binpacking", "schedgym.agents.baselines.gain_overhead:BinPacking", _GO)
register("spreading", "schedgym.agents.baselines.gain_overhead:Spreading", _GO)
register("myopic-opt", "schedgym.agents.myopic_opt:MyopicOpt", _GO)
register("random", "schedgym.agents.baselines.random_agent:RandomAgent", None)
_FS = ("schedgym/FluctuatingSpeed-v0",)
register("esdp", "schedgym.agents.esdp:ESDP", _FS)
register("esdp-aa", "schedgym.agents.esdp:ESDPArrivalAware", _FS)
register("hauf", "schedgym.agents.baselines.fluctuating_speed:HAUF", _FS)
register("lcf", "schedgym.agents.baselines.fluctuating_speed:LCF", _FS)
register("lwtf", "schedgym.agents.baselines.fluctuating_speed:LWTF", _FS)
register("greedy-index", "schedgym.agents.baselines.greedy_index:GreedyIndex", _FS)
register("oracle", "schedgym.agents.baselines.fluctuating_speed:Oracle", _FS, benchmark=True)
_DW = ("schedgym/DeadlineWelfare-v0",)
register("onsocmax", "schedgym.agents.onsocmax:OnSocMax", _DW)
register("max-first", "schedgym.agents.baselines.deadline_welfare:MaxFirst", _DW)
register("equal-share", "schedgym.agents.baselines.deadline_welfare:EqualShare", _DW)
register("jsq", "schedgym.agents.baselines.deadline_welfare:JSQ", _DW)
register("myopic-welfare", "schedgym.agents.myopic_welfare:MyopicWelfare", _DW)
register("fixed-price", "schedgym.agents.baselines.fixed_price:FixedPrice", _GO + _DW)
register("time-of-use", "schedgym.agents.baselines.time_of_use:TimeOfUse", _DW)

__all__ = ["Agent", "AgentSpec", "is_benchmark", "make", "names", "register"]
