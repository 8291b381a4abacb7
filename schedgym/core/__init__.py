"""Shared math and plumbing for every schedgym environment.

- :mod:`schedgym.core.validation` - argument checks with clear error messages
- :mod:`schedgym.core.rng` - named independent random streams from one seed
- :mod:`schedgym.core.utilities` - concave utility families and their derivatives
- :mod:`schedgym.core.projection` - exact (and the paper's) projection onto capped simplices
- :mod:`schedgym.core.scenarios` - named scenario presets with validated overrides
- :mod:`schedgym.core.envbase` - common env plumbing (observation boxes, action validation)
- :mod:`schedgym.core.entities` - the ``obs_mode="entities"`` contract: its space and its sizes
- :mod:`schedgym.core.arrays`, :mod:`schedgym.core.arrivals`, :mod:`schedgym.core.graph`,
  :mod:`schedgym.core.resources` - read-only arrays, arrival samplers, the locality graph,
  resource names
- :mod:`schedgym.core.knapsack`, :mod:`schedgym.core.waterfill`, :mod:`schedgym.core.pairwise` -
  exact 0/1 capacity DPs, water-filling, numpy's pairwise sum as a compiled kernel
"""

from schedgym.core import projection, rng, scenarios, utilities, validation

__all__ = ["projection", "rng", "scenarios", "utilities", "validation"]
