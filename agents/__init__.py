"""Classical online agents for the schedgym environments (SB3 ``predict`` protocol).

``agents.make(name, env, **kw)`` builds any of them by name; see :mod:`agents.registry`.
"""

from schedgym.agents.base import Agent
from schedgym.agents.registry import is_benchmark, make, names, register

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

__all__ = ["Agent", "is_benchmark", "make", "names", "register"]
