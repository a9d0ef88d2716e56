"""The SimPy simulation: one clock, one :class:`~clustersim.engine.flow.FlowNetwork`.

A :class:`Simulation` owns ``env`` (a ``simpy.Environment``) and the flow network over the
cluster's links. The network wakes up only when a flow starts or ends; one pending wake-up is
kept and stale ones are ignored (a version counter), so the event count grows with flows, not
bytes.

The engine knows flows, not collectives: the collective algorithms are given to it
(``collectives=``, an object with the :class:`CollectiveAlgorithms` method ``start``; the
flow-level NCCL algorithms are :class:`clustersim.collectives.flow.FlowCollectives`, and
:func:`clustersim.collectives.flow.flow_simulation` builds a Simulation with them).
:meth:`Simulation.collective` hands a collective to them as a SimPy process.

Extend it by composition: other components (GPU streams) use ``sim.env``,
``sim.start_flows(...)`` and ``sim.collective(...)``.

>>> from clustersim.topology import load_cluster
>>> c = load_cluster("hgx-h200", gpus=2)
>>> sim = Simulation(c)
>>> done = sim.start_flows([c.route(0, 1)], [450e9])   # 450 GB over NVLink 0 -> NVSwitch -> 1 (450 GB/s)
>>> sim.env.run()
>>> round(sim.env.now, 9)
1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import simpy

from clustersim.engine.flow import FlowNetwork
from clustersim.errors import ClusterSimError


@dataclass
class FlowGroup:
    """Flows started together; ``done`` fires when all of them have finished."""

    gid: int
    remaining: int
    done: simpy.Event
    tag: dict = field(default_factory=dict)


class CollectiveAlgorithms(Protocol):
    """What :meth:`Simulation.collective` needs: something that runs a collective on the simulation."""

    def start(self, sim: Simulation, op: str, ranks, size_bytes: float, *, algorithm: str, protocol: str,
              tag: dict) -> simpy.Process:
        """Validate the request (bad input raises here, not inside ``env.run``) and start its process."""
        ...  # pragma: no cover - a Protocol method has no body


class Simulation:
    """SimPy environment + flow network over a cluster.

    Parameters
    ----------
    cluster : clustersim.topology.Cluster
        Links (capacities, names, kinds) of the flow network; routes come from it.
    collectives : CollectiveAlgorithms, optional
        The collective algorithms :meth:`collective` runs (None: flows only).
    env : simpy.Environment, optional
        Share a clock with other components (default: a new one).
    link_capacity : numpy.ndarray, optional
        Override the link capacities (bytes/s), e.g. to degrade a link.
    """

    def __init__(self, cluster, *, collectives: CollectiveAlgorithms | None = None,
                 env: simpy.Environment | None = None, link_capacity: np.ndarray | None = None):
        self.env = env if env is not None else simpy.Environment()
        self.cluster = cluster
        self.collectives = collectives
        cap = np.asarray(self.cluster.link_bandwidth if link_capacity is None else link_capacity, dtype=float)
        if cap.shape != self.cluster.link_bandwidth.shape:
            raise ClusterSimError(f"link_capacity needs {len(self.cluster.link_bandwidth)} values, got {cap.size}",
                                  field="link_capacity")
        if not np.all(np.isfinite(cap) & (cap > 0)):
            raise ClusterSimError("link capacities must be finite and > 0 (a failed link is a routing change, "
                                  "not a zero capacity)", field="link_capacity")
        self.net = FlowNetwork(cap)
        self._groups: dict[int, FlowGroup] = {}
        self._next_gid = 0
        self._version = 0
        self._last = 0.0
        self.records: list[dict] = []

    # -- link accounting --------------------------------------------------------------------
    @property
    def link_busy_time(self) -> np.ndarray:
        """Seconds each link carried traffic."""
        self._sync()
        return self.net.link_busy

    @property
    def link_bytes(self) -> np.ndarray:
        """Bytes each link carried."""
        self._sync()
        return self.net.link_bytes

    def busiest_links(self, k: int = 10) -> list[dict]:
        """The ``k`` links with the most busy time: name, kind, busy_s, bytes, utilisation."""
        busy = self.link_busy_time
        order = np.argsort(-busy, kind="stable")[:k]
        T = max(self.env.now, 1e-30)
        c = self.cluster
        return [{"link": c.link_names[i], "kind": str(c.link_kind[i]), "busy_s": float(busy[i]),
                 "bytes": float(self.net.link_bytes[i]),
                 "utilisation": float(self.net.link_bytes[i] / (self.net.capacity[i] * T))}
                for i in order if busy[i] > 0]

    # -- flows ------------------------------------------------------------------------------
    def _sync(self) -> list[int]:
        """Advance the network to env.now; return groups that completed."""
        dt = self.env.now - self._last
        self._last = self.env.now
        done = self.net.advance(dt) if dt > 0 else self.net.advance(0.0)
        finished = []
        if len(done):
            gd = self.net.group[done]
            base = int(gd.min())
            counts = np.bincount(gd - base)
            gids = np.flatnonzero(counts)
            for g, k in zip((gids + base).tolist(), counts[gids].tolist()):
                grp = self._groups[g]
                grp.remaining -= k
                if grp.remaining <= 0:
                    finished.append(g)
        return finished

    def start_flows(self, paths: list[np.ndarray], nbytes, caps=None, tag: dict | None = None) -> simpy.Event:
        """Start flows now; the returned event fires when all have finished."""
        finished = self._sync()
        gid = self._next_gid
        self._next_gid += 1
        ev = self.env.event()
        nb = np.asarray(nbytes, dtype=float)
        ids = self.net.add_flows(paths, nb, caps, group=gid)
        n_live = int((nb > 0).sum())
        grp = FlowGroup(gid, n_live, ev, tag or {})
        self._groups[gid] = grp
        if n_live == 0:
            ev.succeed()
            del self._groups[gid]
        del ids
        self._finish(finished)
        self._reschedule()
        return ev

    def _finish(self, gids: list[int]) -> None:
        for g in gids:
            grp = self._groups.pop(g)
            grp.done.succeed()

    def _reschedule(self) -> None:
        self.net.recompute()
        self._version += 1
        dt = self.net.next_completion()
        if dt == float("inf"):
            return
        v = self._version
        self.env.process(self._wake(dt, v))

    def _wake(self, dt: float, version: int):
        yield self.env.timeout(dt)
        if version != self._version:
            return
        finished = self._sync()
        self._finish(finished)
        self._reschedule()

    # -- collectives ------------------------------------------------------------------------
    def collective(self, op: str, ranks, size_bytes: float, algorithm: str = "auto", protocol: str = "auto",
                   tag: dict | None = None) -> simpy.Process:
        """Start a collective as a SimPy process through the given :class:`CollectiveAlgorithms`.

        With :class:`~clustersim.collectives.flow.FlowCollectives` the process's value is a
        :class:`~clustersim.collectives.CollectiveResult` with the simulated time.
        """
        if self.collectives is None:
            raise TypeError("this Simulation was built without collective algorithms (collectives=None); "
                            "use clustersim.collectives.flow.flow_simulation(...)")
        return self.collectives.start(self, op, ranks, size_bytes, algorithm=algorithm, protocol=protocol,
                                      tag=tag or {})
