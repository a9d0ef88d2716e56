"""The topology a calibration fit was measured on, as the fit reads it (line rates, communicators).

``clustersim.calibration`` is a side branch that never loads a cluster (docs/architecture.md,
"Import direction"); a fit that records line rates and fits the link model is handed a
:class:`TopologyLines` instead (:class:`clustersim.calibration.fit.pipeline.FitTopology`). Making
one reads nothing: the topology is loaded when the fit asks, after the profile itself has been
fitted, so a bad topology is reported where ``calibrate fit`` always reported it.

>>> t = TopologyLines("hgx-h200")
>>> t.line_rates_GBps()
{'nvlink': 450.0, 'pcie': 63.0, 'network': 50.0}
>>> lines, sm = t.communicator(2)
>>> lines(2)["intra_hw"], sm
('nvlink', 90)
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from clustersim.collectives.model import communicator_lines
from clustersim.topology import load_cluster

#: the link classes a profile records line rates for
LINK_CLASSES = ("nvlink", "pcie", "network")


class TopologyLines:
    """A topology (shipped name or YAML file) whose line rates are read when asked.

    Parameters
    ----------
    topology:
        What ``--topology`` takes; kept as given in :attr:`name` (the link model's messages and
        method text name it so).
    """

    def __init__(self, topology: str | Path):
        self.topology = topology
        self.name = str(topology)

    def line_rates_GBps(self) -> dict[str, float]:
        """Per link class the node has, one GPU's line rate in GB/s per direction
        (:meth:`clustersim.topology.Cluster.class_line_rate`)."""
        cluster = load_cluster(self.topology)
        rates = {k: cluster.class_line_rate(k) for k in LINK_CLASSES}
        return {k: v / 1e9 for k, v in rates.items() if v}

    def communicator(self, max_gpus: int) -> tuple[Callable[[int], dict], int]:
        """``(lines, sm)`` for communicators of up to ``max_gpus`` GPUs
        (:func:`clustersim.collectives.model.communicator_lines`)."""
        return communicator_lines(self.topology, max_gpus)

    def __repr__(self) -> str:
        return f"TopologyLines({self.name!r})"
