"""The host section of a fitted profile: framework call time, per-call overhead, communicator start-up.

Owns how ``framework_call`` and ``comm_init`` rows, and the framework-mode
collective entries next to their NCCL-mode twins, become the profile's ``host``
fields.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import numpy as np

from clustersim.calibration.fit.collective import entry_key
from clustersim.calibration.fit.measurements import Measurements
from clustersim.calibration.fit.profile_file import rounded
from clustersim.config.profile import CollectiveEntry, CommInit


def fit_comm_init(rows: Sequence[dict[str, Any]]) -> CommInit:
    """``time = base + per_rank * ranks`` by non-negative least squares.

    With one rank count measured the whole time is the base. ``extrapolated``
    is True unless at least 3 rank counts up to 16 or more were measured
    (start-up cost grows with the bootstrap all-gather; small counts say little
    about 1000s of ranks).
    """
    from scipy.optimize import nnls

    ranks = np.array([float(r["ranks"]) for r in rows])
    times = np.array([float(r["time_s"]) for r in rows])
    measured = sorted({int(x) for x in ranks})
    if len(measured) >= 2:
        (base, per_rank), _ = nnls(np.column_stack([np.ones_like(ranks), ranks]), times)
    else:
        base, per_rank = float(np.median(times)), 0.0
    extrapolated = not (len(measured) >= 3 and max(measured) >= 16)
    return CommInit(base_s=rounded(float(base)), per_rank_s=rounded(float(per_rank)), extrapolated=extrapolated,
                    measured_ranks=measured)


def host_section(meas: Measurements, host: dict[str, Any], entries: Sequence[CollectiveEntry]) -> dict[str, Any]:
    """``host`` (the base profile's section, JSON form) with every field the measurements determine replaced.

    ``framework_call_us``: the median ``framework_call`` row, else the median
    small-size alpha of the framework-mode entries. ``per_call_overhead_us``:
    framework-level time minus NCCL-level time of the same small call (entry
    twins, else against the median NCCL-mode alpha), at least 0.
    """
    host = dict(host)
    fw = [float(r["time_us"]) for r in meas.of("framework_call")]
    fw_entries = [e for e in entries if e.mode == "framework"]
    if fw:
        host["framework_call_us"] = rounded(statistics.median(fw))
    elif fw_entries:
        host["framework_call_us"] = rounded(statistics.median(e.segments[0].alpha_us for e in fw_entries))
    if host.get("framework_call_us") is not None and (fw or fw_entries):
        # host-side cost = framework-level time - NCCL-level time of the same small call
        diffs = []
        for e in fw_entries:
            twin = next((x for x in entries if x.mode == "nccl" and entry_key(x)[:5] == entry_key(e)[:5]), None)
            if twin is not None:
                diffs.append(e.segments[0].alpha_us - twin.segments[0].alpha_us)
        if not diffs and fw:
            nccl_small = [x.segments[0].alpha_us for x in entries if x.mode == "nccl"]
            if nccl_small:
                diffs.append(host["framework_call_us"] - statistics.median(nccl_small))
        if diffs:
            host["per_call_overhead_us"] = rounded(max(0.0, statistics.median(diffs)))
    ci_rows = meas.of("comm_init")
    if ci_rows:
        host["comm_init"] = fit_comm_init(ci_rows).model_dump(mode="json")
    return host
