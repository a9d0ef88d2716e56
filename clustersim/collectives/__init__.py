"""Collective communication cost (Contract 2 of docs/architecture.md).

Engine-free: importing this package does not import simpy. The flow-level algorithms
live in :mod:`clustersim.collectives.flow` (which imports :mod:`clustersim.engine`; import it
explicitly: ``from clustersim.collectives.flow import flow_simulation``).

>>> from clustersim.collectives import CollectiveModel, busbw_factor
>>> busbw_factor("all_reduce", 2)
1.0
"""

from clustersim.collectives.formulas import ALGORITHMS, OPS, PROTOCOLS, busbw_factor
from clustersim.collectives.model import CollectiveModel, CollectiveResult
from clustersim.collectives.profiles import load_profile_for, resolve_profile

__all__ = ["ALGORITHMS", "OPS", "PROTOCOLS", "CollectiveModel", "CollectiveResult", "busbw_factor",
           "load_profile_for", "resolve_profile"]
