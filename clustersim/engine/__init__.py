"""The discrete-event engine: the only package that imports simpy.

:class:`Simulation` owns the SimPy environment and the max-min fair
:class:`FlowNetwork`; collectives run on it as SimPy processes.
"""

from clustersim.engine.flow import FlowNetwork, max_min_rates
from clustersim.engine.sim import Simulation

__all__ = ["FlowNetwork", "Simulation", "max_min_rates"]
