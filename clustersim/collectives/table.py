"""The nccl-tests-style table of one collective over sizes: what ``clustersim collective`` prints.

:func:`collective_table` loads the topology and its profile, prices the collective at every size
(closed forms at ``analytical`` fidelity, one discrete-event simulation per size at ``flow``) and,
where the profile entry used carries confidence intervals, adds its 95% band
(:func:`clustersim.collectives.uncertainty.predict`) around the reported time.

Sizes follow nccl-tests: all_gather/reduce_scatter = whole all-rank buffer, all_to_all = each
rank's send buffer, send_recv = bytes each rank sends; busbw uses nccl-tests' factors.

>>> t = collective_table("all_reduce", "hgx-h200", gpus=2, sizes="1MiB:4MiB")
>>> [r["size_bytes"] for r in t.rows], t.rows[0]["algorithm"], "time_lo_s" in t.rows[0]
([1048576, 2097152, 4194304], 'ring', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clustersim.collectives.formulas import check_op
from clustersim.collectives.model import CollectiveModel, normalise_algorithm
from clustersim.collectives.profiles import load_profile_for
from clustersim.collectives.uncertainty import predict
from clustersim.errors import ClusterSimError
from clustersim.topology import load_cluster
from clustersim.units import parse_size, parse_size_range

FIDELITIES = ("analytical", "flow")


@dataclass
class CollectiveTable:
    """One collective priced at each size, a row per size.

    ``rows`` are the JSON rows of ``clustersim collective --json``: the estimate's own fields
    (``op``, ``gpus``, ``nodes``, ``size_bytes``, ``time_s``, ``time_us``, ``algbw_GBps``,
    ``busbw_GBps``, ``algorithm``, ``protocol``, ``source`` ...) with ``topology``, ``fidelity``,
    ``profile`` and, where the profile entry has intervals, ``time_lo_s`` / ``time_hi_s``.
    """

    op: str
    topology: str
    fidelity: str
    rows: list[dict] = field(default_factory=list)

    @property
    def banded(self) -> bool:
        """True when some row carries a 95% band."""
        return any("time_lo_s" in r for r in self.rows)

    def to_dict(self) -> dict:
        """The table as JSON: what was priced, then every row."""
        return {"op": self.op, "topology": self.topology, "fidelity": self.fidelity, "rows": list(self.rows)}


def on_off(value: bool | str | None, name: str) -> bool | None:
    """``on``/``off`` (also true/false, 1/0, yes/no) as a bool; a bool or None as it is.

    >>> on_off("Off", "nvls"), on_off(None, "nvls"), on_off(True, "p2p")
    (False, None, True)
    """
    if value is None or isinstance(value, bool):
        return value
    v = value.strip().lower()
    if v in ("on", "true", "1", "yes"):
        return True
    if v in ("off", "false", "0", "no"):
        return False
    raise ClusterSimError(f"--{name} must be on or off, got {value!r}", field=name)


def entry_band(model: CollectiveModel, op: str, n: int, size: float, algorithm: str, protocol: str,
               time_s: float) -> tuple[float, float] | None:
    """95% band (lo, hi) in seconds around ``time_s`` from the CIs of the profile entry used, or None.

    The band of the entry's line (:func:`clustersim.collectives.uncertainty.predict`) is moved onto the
    reported time (which adds the kernel gap to the entry, and at flow fidelity is the simulated time).
    """
    rk = model.ranks_of(n)
    hit = model.match_entry(op, normalise_algorithm(algorithm), (protocol or "auto").strip().lower(), len(rk),
                            model.context(rk).scope, float(size))
    if hit is None:
        return None
    entry, seg = hit
    if seg.alpha_ci_us is None and seg.algbw_ci_GBps is None:
        return None
    t, lo, hi = predict(entry, float(size))
    return max(0.0, time_s - (t - lo)), time_s + (hi - t)


def collective_table(op: str, topology: str, *, gpus: int | None = None, nodes: int | None = None,
                     size: str | int | None = None, sizes: str | None = None, algorithm: str = "auto",
                     protocol: str = "auto", nvls: bool | str | None = None, p2p: bool | str = True,
                     gdr: bool | str = True, profile: str | None = None,
                     fidelity: str = "analytical") -> CollectiveTable:
    """Predict the NCCL-level time of ``op`` (what nccl-tests measures) at one size or a range of sizes.

    Parameters
    ----------
    op:
        ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``broadcast``, ``reduce``, ``all_to_all``,
        ``scatter``, ``gather``, ``send_recv`` or ``barrier``.
    topology:
        Shipped topology name or YAML path; ``gpus`` takes its first N GPUs, ``nodes`` replicates
        its node N times (not both).
    size, sizes:
        Exactly one: a size (``4096``, ``"256MiB"``) or a range ``"START:END[:xF]"`` (factor 2 by
        default). A barrier takes neither.
    algorithm, protocol:
        ``auto`` (NCCL's choice) or a name (``ring``, ``tree``, ``nvls`` ...; ``ll``, ``ll128``, ``simple``).
    nvls, p2p, gdr:
        NVLink SHARP (None: the profile's), GPU peer-to-peer, GPUDirect RDMA: a bool or ``"on"``/``"off"``.
    profile:
        Calibration profile name or YAML (default: the topology's).
    fidelity:
        ``analytical`` (closed forms) or ``flow`` (one discrete-event simulation per size, its
        events checked against the budget of :mod:`clustersim.budget` first).

    Raises
    ------
    ClusterSimError
        An unknown op, algorithm, protocol or fidelity, sizes given wrong, a bad topology or profile.
    """
    check_op(op)
    if op == "barrier":
        # a barrier moves no data: a size would be silently dropped, so only 0 (or none) is accepted
        if sizes is not None or (size is not None and parse_size(size) != 0):
            raise ClusterSimError("a barrier moves no data; leave out --size and --sizes", field="size")
        size = "0"
    if (size is None) == (sizes is None):
        raise ClusterSimError("give exactly one of --size S or --sizes START:END[:xF]", field="size")
    if gpus is not None and nodes is not None:
        raise ClusterSimError("give --gpus or --nodes, not both", field="gpus")
    if fidelity not in FIDELITIES:
        raise ClusterSimError(f"--fidelity must be analytical or flow, got {fidelity!r}", field="fidelity")
    try:
        size_list = [parse_size(size)] if size is not None else parse_size_range(sizes)
    except ClusterSimError as exc:
        raise ClusterSimError(exc.reason, field="size" if size is not None else "sizes") from None
    cluster = load_cluster(topology, nodes=nodes, gpus=gpus)
    if fidelity == "flow":
        from clustersim.budget import FLOW_EVENTS_PER_RANK, check_events

        # each size is one discrete-event simulation whose flows grow with the ranks
        check_events(len(size_list) * cluster.n_gpus * FLOW_EVENTS_PER_RANK,
                     f"{len(size_list)} size(s) at flow fidelity on {cluster.n_gpus:,} GPUs", field="sizes")
    prof = load_profile_for(cluster, profile)
    kw = dict(nvls=on_off(nvls, "nvls"), p2p=on_off(p2p, "p2p"), gdr=on_off(gdr, "gdr"))
    n = cluster.n_gpus
    if fidelity == "analytical":
        model = CollectiveModel(cluster, prof, **kw)
        results = [model.estimate(op, n, s, algorithm, protocol) for s in size_list]
    else:
        from clustersim.collectives.flow import flow_simulation

        results = []
        for s in size_list:
            sim = flow_simulation(cluster, prof, **kw)
            p = sim.collective(op, n, s, algorithm=algorithm, protocol=protocol)
            sim.env.run()
            results.append(p.value)
        model = CollectiveModel(cluster, prof, **kw)  # the profile entries the bands come from
    table = CollectiveTable(op=op, topology=cluster.name, fidelity=fidelity)
    for s, r in zip(size_list, results):
        d = r.to_dict()
        d.update(topology=cluster.name, fidelity=fidelity, profile=prof.name if prof is not None else None)
        if r.source == "profile":
            band = entry_band(model, op, n, s, algorithm, protocol, r.time_s)
            if band is not None:
                d["time_lo_s"], d["time_hi_s"] = band
        table.rows.append(d)
    return table
