"""Collective communication cost (Contract 2 of docs/architecture.md).

Engine-free: importing this package does not import simpy. The flow-level algorithms
live in :mod:`clustersim.collectives.flow` (which imports :mod:`clustersim.engine`; import it
explicitly: ``from clustersim.collectives.flow import flow_simulation``).

>>> from clustersim.collectives import CollectiveModel, busbw_factor
>>> busbw_factor("all_reduce", 2)
1.0
"""

from clustersim.collectives.formulas import ALGORITHMS, OPS, PROTOCOLS, busbw_factor

# The cost model and profile loading need numpy, pydantic and PyYAML. They are loaded on
# first use so that `clustersim.collectives.formulas` (imported by the GPU bench, which
# must run where only torch is installed) pulls in nothing beyond the standard library.
_LAZY = {"CollectiveModel": "model", "CollectiveResult": "model",
         "load_profile_for": "profiles", "resolve_profile": "profiles"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"clustersim.collectives.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'clustersim.collectives' has no attribute {name!r}")

__all__ = ["ALGORITHMS", "OPS", "PROTOCOLS", "CollectiveModel", "CollectiveResult", "busbw_factor",
           "load_profile_for", "resolve_profile"]
