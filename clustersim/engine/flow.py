"""Fluid max-min fair flow network (no simpy here; :mod:`clustersim.engine.sim` drives it).

Links have capacities (bytes/s); a flow has a path (link indices), a byte count and an
optional rate cap. Rates are the max-min fair allocation (progressive filling / water
filling) and are recomputed only when a flow starts or ends; between those instants
every flow moves at a constant rate, so there is no event per byte, chunk or step.

The filling is vectorised over a flat incidence list (one entry per (flow, link) pair):
each round raises every unfrozen flow by the smallest remaining fair share of its links
(or its cap), then freezes the flows at their cap or on a saturated link. Rounds equal the
number of distinct bottleneck levels, usually a handful.

>>> import numpy as np
>>> net = FlowNetwork(np.array([10.0, 10.0]))
>>> a = net.add_flows([np.array([0]), np.array([0, 1])], np.array([10.0, 10.0]))
>>> net.rates(a).tolist()
[5.0, 5.0]
"""

from __future__ import annotations

import math

import numpy as np

_EPS = 1e-12


def max_min_rates(capacity: np.ndarray, entry_flow: np.ndarray, entry_link: np.ndarray, caps: np.ndarray
                  ) -> np.ndarray:
    """Max-min fair rates of flows given their (flow, link) incidence entries.

    Parameters
    ----------
    capacity : per-link capacity (bytes/s).
    entry_flow, entry_link : parallel int arrays, one entry per link of each flow's path
        (flow ids are 0..F-1, dense).
    caps : per-flow rate cap (``inf`` for none).
    """
    F_ = len(caps)
    rate = np.zeros(F_)
    if F_ == 0:
        return rate
    # Work on the links some flow crosses only: a 100,000-GPU cluster has ~1.9 million directed
    # links but a step's active flows touch a few thousand, and every filling round below is
    # O(links). Links no flow crosses never bound a rate, so the result is the same.
    if len(entry_link) < len(capacity):
        used, entry_link = np.unique(entry_link, return_inverse=True)
        capacity = capacity[used]
    L = len(capacity)
    rem = np.array(capacity, dtype=float)
    frozen = np.zeros(F_, dtype=bool)
    # flows without links are limited only by their cap
    has = np.zeros(F_, dtype=bool)
    has[entry_flow] = True
    free = ~has
    rate[free] = np.where(np.isfinite(caps[free]), caps[free], 0.0)
    frozen |= free
    ef, el = entry_flow, entry_link
    for _ in range(F_ + L + 1):
        live_e = ~frozen[ef]
        if not live_e.any():
            break
        ef_l, el_l = ef[live_e], el[live_e]
        cnt = np.bincount(el_l, minlength=L)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(cnt > 0, rem / np.maximum(cnt, 1), np.inf)
        # per-flow smallest fair share among its links
        fshare = np.full(F_, np.inf)
        np.minimum.at(fshare, ef_l, share[el_l])
        live = ~frozen
        headroom = caps - rate
        inc = np.minimum(fshare, headroom)
        delta = float(inc[live].min())
        if not math.isfinite(delta):
            break
        delta = max(delta, 0.0)
        rate[live] += delta
        rem -= delta * cnt
        sat = rem <= 1e-9 * np.maximum(capacity, 1.0)
        hit = np.zeros(F_, dtype=bool)
        np.logical_or.at(hit, ef_l, sat[el_l])
        at_cap = np.isfinite(caps) & (caps - rate <= 1e-12 * np.maximum(np.where(np.isfinite(caps), caps, 1.0), 1.0))
        newly = live & (hit | at_cap)
        if not newly.any():  # numerical safety: freeze the flows that set delta
            newly = live & (inc <= delta * (1 + 1e-12))
        frozen |= newly
    return rate


class FlowNetwork:
    """Flows on capacitated links with max-min fair sharing (fluid model).

    The network keeps flat arrays for every flow ever added (ids are stable ints); active
    flows are advanced in time with :meth:`advance` and re-rated with :meth:`recompute`.

    Parameters
    ----------
    capacity : numpy.ndarray
        Bytes/s per link.
    """

    def __init__(self, capacity: np.ndarray):
        self.capacity = np.asarray(capacity, dtype=float).copy()
        L = len(self.capacity)
        self.link_bytes = np.zeros(L)
        self.link_busy = np.zeros(L)
        self.link_load = np.zeros(L)     # current bytes/s through each link
        self._loaded = np.zeros(0, dtype=np.int64)  # indices of links with link_load > 0
        self._n = 0
        self._cap = 0
        self.remaining = np.zeros(0)
        self.rate = np.zeros(0)
        self.rate_cap = np.zeros(0)
        self.active = np.zeros(0, dtype=bool)
        self.group = np.zeros(0, dtype=np.int64)
        self._ef = np.zeros(0, dtype=np.int64)   # entries of active flows
        self._el = np.zeros(0, dtype=np.int64)
        self._dirty = False
        self.now = 0.0
        self.recomputes = 0
        self.flows_started = 0
        #: ``(time s, link indices, bytes/s)`` after every re-rating, when a caller sets it to a list (a trace's
        #: link counters); None: not kept (the default: a long simulation re-rates millions of times)
        self.load_log: list | None = None

    # -- storage --------------------------------------------------------------------------
    def _grow(self, k: int) -> None:
        need = self._n + k
        if need <= self._cap:
            return
        new = max(need, 2 * self._cap, 64)
        for name, dt in (("remaining", float), ("rate", float), ("rate_cap", float), ("active", bool),
                         ("group", np.int64)):
            old = getattr(self, name)
            arr = np.zeros(new, dtype=dt)
            arr[: len(old)] = old
            setattr(self, name, arr)
        self._cap = new

    def add_flows(self, paths: list[np.ndarray], nbytes: np.ndarray, caps: np.ndarray | None = None,
                  group: int = 0) -> np.ndarray:
        """Start flows (at the current time); returns their ids. Call :meth:`recompute` after."""
        k = len(paths)
        nbytes = np.asarray(nbytes, dtype=float)
        caps = np.full(k, np.inf) if caps is None else np.asarray(caps, dtype=float)
        self._grow(k)
        ids = np.arange(self._n, self._n + k)
        self.remaining[ids] = nbytes
        self.rate[ids] = 0.0
        self.rate_cap[ids] = caps
        self.active[ids] = nbytes > 0
        self.group[ids] = group
        self._n += k
        self.flows_started += k
        if k:
            lens = np.fromiter((len(p) for p in paths), dtype=np.int64, count=k)
            ef = np.repeat(ids, lens)
            el = np.concatenate(paths).astype(np.int64) if lens.sum() else np.zeros(0, dtype=np.int64)
            self._ef = np.concatenate([self._ef, ef])
            self._el = np.concatenate([self._el, el])
        self._dirty = True
        return ids

    # -- dynamics -------------------------------------------------------------------------
    def compact(self) -> None:
        """Drop finished flows from the arrays (renumbers flow ids; groups are kept).

        Called automatically by :meth:`recompute` once finished flows dominate, so a long
        simulation costs memory and time in proportion to the flows alive, not all flows ever.
        """
        act = np.flatnonzero(self.active[: self._n])
        new_id = np.full(self._n, -1, dtype=np.int64)
        new_id[act] = np.arange(len(act))
        for name in ("remaining", "rate", "rate_cap", "active", "group"):
            arr = getattr(self, name)
            keep = arr[act].copy()
            out = np.zeros_like(arr)
            out[: len(act)] = keep
            setattr(self, name, out)
        keep_e = new_id[self._ef] >= 0
        self._ef, self._el = new_id[self._ef[keep_e]], self._el[keep_e]
        self._n = len(act)

    def recompute(self) -> None:
        """Max-min fair rates of the active flows (call after flows start or end)."""
        self.recomputes += 1
        if self._n > 4096 and self.n_active < self._n // 4:
            self.compact()
        keep = self.active[self._ef]
        self._ef, self._el = self._ef[keep], self._el[keep]
        act = np.flatnonzero(self.active[: self._n])
        self.rate[: self._n] = 0.0
        if len(act) == 0:
            self.link_load[:] = 0.0
            self._loaded = np.zeros(0, dtype=np.int64)
            if self.load_log is not None:
                self.load_log.append((self.now, self._loaded, self._loaded.astype(float)))
            return
        dense = np.full(self._n, -1, dtype=np.int64)
        dense[act] = np.arange(len(act))
        r = max_min_rates(self.capacity, dense[self._ef], self._el, self.rate_cap[act])
        self.rate[act] = r
        self.link_load = np.bincount(self._el, weights=self.rate[self._ef], minlength=len(self.capacity))
        self._loaded = np.flatnonzero(self.link_load > 0)
        self._dirty = False
        if self.load_log is not None:
            self.load_log.append((self.now, self._loaded, self.link_load[self._loaded]))

    def next_completion(self) -> float:
        """Seconds until the first active flow finishes at current rates (inf if none can)."""
        act = np.flatnonzero(self.active[: self._n])
        if len(act) == 0:
            return math.inf
        r = self.rate[act]
        pos = r > 0
        if not pos.any():
            return math.inf
        return float((self.remaining[act][pos] / r[pos]).min())

    def advance(self, dt: float) -> np.ndarray:
        """Move every active flow ``dt`` seconds forward; returns ids of the flows that finished."""
        if dt > 0:
            act = np.flatnonzero(self.active[: self._n])
            self.remaining[act] -= self.rate[act] * dt
            # only the links that carry flow: O(loaded links), not O(all links), per event
            loaded = self._loaded
            self.link_bytes[loaded] += self.link_load[loaded] * dt
            self.link_busy[loaded] += dt
            self.now += dt
        act = np.flatnonzero(self.active[: self._n])
        done = act[self.remaining[act] <= 1e-9 * np.maximum(1.0, self.rate[act]) + 1e-6]
        self.active[done] = False
        self.remaining[done] = 0.0
        return done

    def rates(self, ids: np.ndarray | None = None) -> np.ndarray:
        """Current rates (bytes/s) of ``ids`` (recomputing first if flows changed)."""
        if self._dirty:
            self.recompute()
        return self.rate[: self._n].copy() if ids is None else self.rate[np.asarray(ids)]

    @property
    def n_active(self) -> int:
        """Number of flows still moving bytes."""
        return int(self.active[: self._n].sum())
