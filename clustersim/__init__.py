"""clustersim: a discrete-event simulator of GPU training clusters with real-hardware calibration.

Import direction (left may not import right)::

    errors -> units -> config -> topology -> collectives.formulas -> engine -> collectives
           -> workload -> simulate -> trace, report -> cli

The simulator core never imports torch; only ``clustersim.calibration.bench`` does.
"""

__version__ = "0.1.0"

from clustersim.errors import ClusterSimError  # noqa: E402

__all__ = ["ClusterSimError", "__version__"]
