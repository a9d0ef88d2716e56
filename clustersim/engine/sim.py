"""The SimPy simulation: one clock, one :class:`~clustersim.engine.flow.FlowNetwork`.

A :class:`Simulation` owns ``env`` (a ``simpy.Environment``) and the flow network over the
cluster's links. Collectives are SimPy processes (:meth:`Simulation.collective`) that wait
their latency term, start flows on routed paths and finish when their flows finish. The
network wakes up only when a flow starts or ends; one pending wake-up is kept and stale
ones are ignored (a version counter), so the event count grows with flows, not bytes.

Extend it by composition: other components (GPU streams) use ``sim.env`` and
``sim.start_flows(...)``.

>>> from clustersim.topology import load_cluster
>>> sim = Simulation(load_cluster("hgx-h200", gpus=2), None)
>>> p = sim.collective("all_reduce", [0, 1], 2**30)
>>> sim.env.run()
>>> abs(p.value.time_s - sim.model.estimate("all_reduce", 2, 2**30).time_s) < 1e-9
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


class Simulation:
    """SimPy environment + flow network over a cluster.

    Parameters
    ----------
    cluster : clustersim.topology.Cluster
    profile : Profile or None
        Calibration profile for the analytical rates (None: NCCL constants).
    nvls, p2p, gdr : as :class:`~clustersim.collectives.CollectiveModel`.
    link_capacity : numpy.ndarray, optional
        Override the link capacities (bytes/s), e.g. to degrade a link.
    """

    def __init__(self, cluster, profile=None, nvls: bool | None = None, p2p: bool = True, gdr: bool = True,
                 env: simpy.Environment | None = None, link_capacity: np.ndarray | None = None):
        from clustersim.collectives.model import CollectiveModel

        self.env = env if env is not None else simpy.Environment()
        self.model = CollectiveModel(cluster, profile, nvls=nvls, p2p=p2p, gdr=gdr)
        self.cluster = self.model.cluster
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
        """Start a collective as a SimPy process; its value is a :class:`CollectiveResult` with the simulated time."""
        from clustersim.collectives.flow import run_collective

        rk = self.model.ranks_of(ranks)
        res = self.model.estimate(op, rk, size_bytes, algorithm, protocol)  # bad input raises here, not in env.run
        return self.env.process(run_collective(self, op, rk, size_bytes, algorithm, protocol, tag or {}, res))
