"""Execution: play a built step's op graph at the run's fidelity.

``analytical``: the closed-form executor (:func:`~clustersim.simulate.execute.execute_analytical`),
with the overlap stretch solved self-consistently on its timeline
(:func:`~clustersim.simulate.overlap.stretch_fixed_point`). ``flow``: the discrete-event executor
on a flow simulation of the cluster (:func:`~clustersim.simulate.flow.execute_flow`), the stretch
measured on a closed-form pass first (a flow pass costs 10-100x more; uncontended, both give the
same timeline). Both give a :class:`~clustersim.simulate.execute.Timeline`; :class:`Execution`
keeps it with what the result reports of the execution itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from clustersim.simulate.execute import CommCache, Timeline, execute_analytical
from clustersim.simulate.links import busiest_links, tp_private
from clustersim.simulate.resolve import ResolvedScenario
from clustersim.simulate.result import OverlapSlowdown
from clustersim.topology.cluster import Cluster
from clustersim.workload.ops import Graph

if TYPE_CHECKING:  # the engine (simpy) is imported only by a flow run
    from clustersim.engine import Simulation


@dataclass
class Execution:
    """A graph played at a fidelity: its timeline and what the run reports of the execution."""

    fidelity: str
    timeline: Timeline
    #: the flow simulation it ran on (flow fidelity; its ``link_busy_time`` per link); None: analytical
    sim: Simulation | None = None
    #: flow fidelity: the TP collectives took their closed form, their links being private
    #: (:func:`clustersim.simulate.links.tp_private`); None: analytical
    tp_closed_form: bool | None = None
    #: compute and collectives slowing each other where the graph has an overlap table; None: no table
    overlap: OverlapSlowdown | None = None

    @property
    def link_busy(self) -> np.ndarray | None:
        """Busy seconds of every link in the flow network (flow fidelity); None: analytical."""
        return None if self.sim is None else self.sim.link_busy_time

    def busiest_links(self, cluster: Cluster, graph: Graph, comm: CommCache, *, top: int) -> list[dict]:
        """The ``top`` busiest links of this execution of ``graph`` over its makespan
        (:func:`clustersim.simulate.links.busiest_links`)."""
        return busiest_links(cluster, graph, comm, timeline=self.timeline, flow_busy=self.link_busy,
                             tp_closed_form=self.tp_closed_form, makespan=self.timeline.makespan, top=top)


def _overlap(graph: Graph, stretch: dict[int, float]) -> OverlapSlowdown | None:
    if graph.overlap is None:
        return None
    return OverlapSlowdown(compute=graph.overlap[0], collective=graph.overlap[1], stretch_s=sum(stretch.values()))


def execute_graph(rs: ResolvedScenario, cluster: Cluster, graph: Graph, comm: CommCache, *,
                  fidelity: str, record_links: bool = False) -> Execution:
    """Execute ``graph`` on ``cluster`` at ``fidelity`` (``flow`` or ``analytical``); ``comm``: the
    closed-form collective times on that cluster, ``rs``: the scenario's profile and ``cluster:`` switches;
    ``record_links``: keep every link's load over time (``sim.net.load_log``, a trace's link counters)."""
    from clustersim.simulate.overlap import needs_stretch, stretch_fixed_point

    if fidelity == "analytical":
        reuse: dict = {}  # order, host issue and op costs: the same in every pass
        tl = execute_analytical(graph, comm, reuse=reuse)
        stretch, tl = stretch_fixed_point(graph, comm, tl, reuse)  # overlapped work slowed, self-consistently
        return Execution(fidelity, tl, overlap=_overlap(graph, stretch))
    from clustersim.collectives.flow import flow_simulation
    from clustersim.simulate.flow import execute_flow

    c = rs.scenario.cluster
    sim = flow_simulation(cluster, rs.profile, nvls=c.nvls, p2p=c.p2p, gdr=c.gpudirect_rdma)
    if record_links:
        sim.net.load_log = []
    private = tp_private(cluster, graph)
    stretch: dict[int, float] = {}
    if needs_stretch(graph):
        # where compute and collectives overlap, measured on the closed-form timeline (a flow pass
        # costs 10-100x more; uncontended, both give the same timeline)
        reuse = {}
        stretch, _ = stretch_fixed_point(graph, comm, execute_analytical(graph, comm, reuse=reuse), reuse)
    tl = execute_flow(sim, graph, comm, private_tp=private, stretch=stretch)
    return Execution(fidelity, tl, sim=sim, tp_closed_form=private, overlap=_overlap(graph, stretch))
