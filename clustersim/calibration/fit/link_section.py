"""The profile's ``link_model`` section from measured collectives (Contract 3 rows) and a topology.

Owns the step from rows to the section the simulator reads (:class:`~clustersim.config.profile.Profile`
``link_model``): :func:`~clustersim.calibration.fit.linkmodel.fit_link_model` at the line rates the
topology gives the communicators measured, the learned parameters rounded to 4 significant digits, and
the provenance (files, rank and node counts, line rates, fit residual). ``calibrate fit --topology``
and ``profiles/make_profiles.py`` both write it through here.

>>> from clustersim.calibration.fit.measurements import Measurements
>>> rows = [{"kind": "collective", "op": "all_reduce", "ranks": 2, "nodes": 1, "mode": "nccl",
...          "size_bytes": int(s), "time_us": 12 + 2e-3 * s / 330} for s in 4.0 ** np.arange(5, 15)]
>>> nvl = lambda n: {"intra_hw": "nvlink", "intra_line": 450.0, "nodes": 1}
>>> sec = link_model_section(Measurements(rows=rows, files=["m.jsonl"]), "hgx-h200", nvl, 90)
>>> sorted(sec["links"]), sec["provenance"]["ranks"], sec["provenance"]["line_rates_GBps"]
(['nvlink'], [2], {'nvlink': 450.0})
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from clustersim.errors import ClusterSimError

__all__ = ["link_model_section"]


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def link_model_section(meas, topology: str, lines: Callable[[int], dict], sm: int, *, gap_us: float = 0.0,
                       unmeasured_from: str | None = None, note: str = "", command: str = "") -> dict:
    """The ``link_model`` section: the link model (:func:`clustersim.calibration.fit.fit_link_model`)
    fitted on every NCCL-level collective row of ``meas`` (NCCL's own algorithm and protocol, no NVLS),
    with the line rates of ``topology`` for the communicators measured.

    Only the classes the rows crossed are written (a one-node bench: the intra-node class, no network;
    rows over several nodes add ``network`` at the topology's NIC line rate, NICs per node in the
    provenance): the simulator uses the link model only for communicators whose classes it learned.
    Each rank count's node count in the rows must be the one ``topology`` gives that many GPUs (same
    GPUs per node), and all rank counts must share one intra-node class and line rate (and, across
    nodes, one NIC line rate and count).

    ``gap_us``: time every row carries beyond the NCCL-level call, taken off before the fit (nccl-tests
    logs timed back to back without CUDA graphs include one GPU-side kernel gap per call, which the
    simulator adds to every call: ``compute.kernel_launch_us``; 0 for CUDA-graph replays).
    ``unmeasured_from``: a measured op (``"all_reduce"``) whose launch floor and own-chunk rate the
    unmeasured collectives of NCCL's table (:data:`TABLE_OPS`: all_gather, reduce_scatter, broadcast,
    reduce) take, so that they run on the fitted link parameters with NCCL's structure; None: only the
    measured ops. Point-to-point ops are left to the other models: across nodes the link model gives a
    call the node's NICs together (right for a ring, which crosses each node boundary once per channel),
    whereas every GPU of an all_to_all sends its own share through the network (32 A100 on 4 nodes,
    1 GiB: 11.6 ms where 24 of 32 parts over one 25 GB/s NIC per GPU take at least 32 ms).
    ``note``: what was measured, appended to the method text. ``command``: what wrote it (in the method text).
    ``lines(n)``: what the topology gives a communicator of ``n`` ranks (its intra-node class
    ``intra_hw``, ``intra_line`` GB/s, ``nodes``, and across nodes ``net_line`` GB/s per NIC and ``nics``
    per node: :func:`clustersim.collectives.model.communicator_lines`); ``sm``: the GPU's compute
    capability x 10 (NCCL's protocol table depends on it); ``topology``: its name, for the messages and
    the method text.
    Raises :class:`~clustersim.errors.ClusterSimError` where the rows and the topology do not match.
    """
    from clustersim.calibration.fit.linkmodel import LOCAL_OPS, MODEL_OPS, PROTOS, TABLE_OPS, fit_link_model
    from clustersim.calibration.transfer_report import model_rows

    rows = model_rows(meas.rows)
    if not rows:
        raise ClusterSimError(f"no NCCL-level collective rows in {', '.join(meas.files)} for the link model")
    if gap_us:
        rows = [{**r, "time_us": float(r["time_us"]) - gap_us} for r in rows]
    ranks = sorted({int(r.get("ranks") or 2) for r in rows})
    nodes = sorted({int(r.get("nodes") or 1) for r in rows})
    top = lines(max(ranks))
    cls, line = top["intra_hw"], top["intra_line"]
    net = nics = None
    # every rank count measured must sit on the same line rates (one intra-node class, one NIC rate), and on
    # as many nodes in the topology as in the rows (the same GPUs per node)
    for n in ranks:
        c = lines(n)
        measured_nodes = {int(r.get("nodes") or 1) for r in rows if int(r.get("ranks") or 2) == n}
        if measured_nodes != {c["nodes"]}:
            raise ClusterSimError(f"{topology}: {n} ranks span {c['nodes']} node(s) there, the rows "
                                  f"{sorted(measured_nodes)}: not the node design measured")
        if c["intra_hw"] != cls or c["intra_line"] != line:
            raise ClusterSimError(f"{topology}: {n} ranks cross another class or line rate than {max(ranks)} ranks")
        if c["nodes"] > 1:
            if net is not None and (c["net_line"], c["nics"]) != (net, nics):
                raise ClusterSimError(f"{topology}: {n} ranks reach the network at another line rate or NIC count")
            net, nics = c["net_line"], c["nics"]
    net_kw = {"net_line_GBps": net, "nics_per_node": nics} if net is not None else {}
    fit = fit_link_model(rows, intra_line_GBps=line, sm=sm, intra_hw=cls, **net_kw)
    err = 100 * np.abs(np.expm1(fit.residuals))
    ops = {}
    for i, op in enumerate(fit.ops):
        entry = {"floor_us": _sig(fit.floor_us[i])}
        if op not in TABLE_OPS:
            entry["op_efficiency"] = _sig(fit.op_eff[i])
        if op in LOCAL_OPS:
            entry["local_GBps"] = _sig(fit.local_GBps[i])
        entry["startup_depth"] = _sig(fit.startup_depth[i])
        ops[op] = entry
    src = unmeasured_from
    if src is not None:
        if src not in ops:
            raise ClusterSimError(f"unmeasured_from={src!r}: no {src} rows in {', '.join(meas.files)}")
        for op in TABLE_OPS:
            if op not in ops:
                ops[op] = {"floor_us": ops[src]["floor_us"]}
                if op in LOCAL_OPS and "local_GBps" in ops[src]:
                    ops[op]["local_GBps"] = ops[src]["local_GBps"]
                ops[op]["startup_depth"] = ops[src]["startup_depth"]
        ops = {op: ops[op] for op in MODEL_OPS if op in ops}
    links = {cls: {p: {"efficiency": _sig(fit.eff_intra[j]), "latency_us": _sig(fit.lat_intra_us[j])}
                   for j, p in enumerate(PROTOS)}}
    rates = {cls: line}
    if net is not None:
        links["network"] = {p: {"efficiency": _sig(fit.eff_inter[j]), "latency_us": _sig(fit.lat_inter_us[j])}
                            for j, p in enumerate(PROTOS)}
        rates["network"] = net
        method = (f"clustersim.calibration.fit.fit_link_model on every mode-nccl collective row (NCCL's own "
                  f"algorithm and protocol, no NVLS) at the {topology} line rates: {cls} {line:g} GB/s per GPU, "
                  f"network {net:g} GB/s per NIC x {nics} NICs per node")
    else:
        method = (f"clustersim.calibration.fit.fit_link_model on every mode-nccl collective row (NCCL's own "
                  f"algorithm and protocol, no NVLS) at the {topology} line rate of {cls} ({line:g} GB/s per "
                  f"GPU); the network class was not measured")
    if gap_us:
        method += (f"; each row's time less {gap_us:g} us, the GPU-side kernel gap of a back-to-back call "
                   f"(compute.kernel_launch_us), which the simulator adds to every call")
    if src is not None:
        measured = ", ".join(fit.ops)
        method += (f"; only {measured} was measured: the other collectives of NCCL's table ("
                   f"{', '.join(o for o in TABLE_OPS if o not in fit.ops)}) run on the fitted link parameters "
                   f"with NCCL's structure (step counts, algorithm and protocol choice) and the launch floor and "
                   f"own-chunk rate of {src}; point-to-point ops (all_to_all, send_recv) keep NCCL's constants on "
                   f"the link classes (every GPU of an all_to_all sends through the network, not the node's NICs "
                   f"together as a ring)")
    method += "." + (f" {note.rstrip('.')}." if note else "") + (f" Written by `{command}`." if command else "")
    prov = {"files": list(meas.files), "rows": len(rows), "ranks": ranks, "nodes": nodes, "line_rates_GBps": rates}
    if nics is not None:
        prov["nics_per_node"] = nics
    prov.update({"residual_median_pct": round(float(np.median(err)), 2),
                 "residual_worst_pct": round(float(err.max()), 2), "method": method})
    return {"links": links, "base_us": {p: _sig(fit.base_us[j]) for j, p in enumerate(PROTOS)}, "ops": ops,
            "startup_us": _sig(fit.startup_us), "provenance": prov}
