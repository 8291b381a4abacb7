"""Classical online agents for the schedgym environments (SB3 ``predict`` protocol).

``agents.make(name, env, **kw)`` builds any of them by name; see :mod:`agents.registry`.
"""

from agents.base import Agent
from agents.registry import is_benchmark, make, names, register

_GO = ("schedgym/GainOverhead-v0",)
register("ogasched", "agents.ogasched:OgaSched", _GO)
register("drf", "agents.baselines.gain_overhead:DRF", _GO)
register("fairness", "agents.baselines.gain_overhead:Fairness", _GO)
register("binpacking", "agents.baselines.gain_overhead:BinPacking", _GO)
register("spreading", "agents.baselines.gain_overhead:Spreading", _GO)
register("random", "agents.baselines.random_agent:RandomAgent", None)
_FS = ("schedgym/FluctuatingSpeed-v0",)
register("esdp", "agents.esdp:ESDP", _FS)
register("esdp-aa", "agents.esdp:ESDPArrivalAware", _FS)
register("hauf", "agents.baselines.fluctuating_speed:HAUF", _FS)
register("lcf", "agents.baselines.fluctuating_speed:LCF", _FS)
register("lwtf", "agents.baselines.fluctuating_speed:LWTF", _FS)
register("oracle", "agents.baselines.fluctuating_speed:Oracle", _FS, benchmark=True)
_DW = ("schedgym/DeadlineWelfare-v0",)
register("onsocmax", "agents.onsocmax:OnSocMax", _DW)
register("max-first", "agents.baselines.deadline_welfare:MaxFirst", _DW)
register("equal-share", "agents.baselines.deadline_welfare:EqualShare", _DW)
register("jsq", "agents.baselines.deadline_welfare:JSQ", _DW)

__all__ = ["Agent", "is_benchmark", "make", "names", "register"]
