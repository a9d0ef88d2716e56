"""Collective entries: one context's rows fitted into a :class:`~clustersim.config.profile.CollectiveEntry`.

Owns the step from grouped measurements to the profile's collective entries:
:func:`fit_collective` (one context, a piecewise fit in seconds and bytes) and
:func:`fit_collectives` (every context of a measurement set: which NVLS setting
is fitted, which sizes are held out, which contexts have too few sizes).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from clustersim.calibration.fit.grouping import split_holdout
from clustersim.calibration.fit.piecewise import fit_piecewise
from clustersim.config.profile import CollectiveEntry
from clustersim.errors import ClusterSimError

#: ``switches(op, ranks, scope) -> sizes`` where NCCL's tuner changes algorithm/protocol (see fit_piecewise).
Switches = Callable[[str, "int | None", "str | None"], Sequence[float]]


def entry_key(e: CollectiveEntry) -> tuple:
    """What makes two entries the same context: (op, algorithm, protocol, ranks, scope, mode)."""
    return (e.op, e.algorithm, e.protocol, e.ranks, e.scope, e.mode)


def fit_collective(rows: Sequence[dict[str, Any]], *, max_segments: int = 6, min_sizes: int = 3, ci: str = "t",
                   rng: np.random.Generator | None = None, switches: Switches | None = None) -> CollectiveEntry:
    """Fit one context's rows (same :func:`collective_key`) into a :class:`CollectiveEntry`.

    ``switches`` (optional) tells where NCCL's tuner switches protocol for this
    context; only rows with NCCL's own choice (no forced algorithm/protocol) use it.
    """
    if not rows:
        raise ClusterSimError("no collective rows to fit")
    r0 = rows[0]
    S = [float(r["size_bytes"]) for r in rows]
    t = [float(r["time_us"]) * 1e-6 for r in rows]
    sw = None
    if switches is not None:  # a forced algorithm/protocol does not switch: bridge every gap
        forced = r0.get("algorithm") is not None or r0.get("protocol") is not None
        sw = [] if forced else list(switches(r0["op"], r0.get("ranks"), r0.get("scope")))
    segs = fit_piecewise(S, t, max_segments=max_segments, min_sizes=min_sizes, ci=ci, rng=rng, switches=sw)
    return CollectiveEntry(
        op=r0["op"], algorithm=r0.get("algorithm"), protocol=r0.get("protocol"), ranks=r0.get("ranks"),
        scope=r0.get("scope"), mode=r0.get("mode", "nccl"), segments=[s.to_segment() for s in segs],
    )


def fit_collectives(groups: dict[tuple, list[dict[str, Any]]], *, nvls: bool, holdout: str, max_segments: int,
                    min_sizes: int, ci: str, rng: np.random.Generator, switches: Switches | None,
                    ) -> tuple[list[CollectiveEntry], list[dict[str, Any]], list[str]]:
    """Every context of ``groups`` (from :func:`group_collectives`) fitted: ``(entries, held-out rows, notes)``.

    An entry has no nvls field: a context measured both with and without NVLS
    keeps the rows measured with ``nvls`` (the profile's setting). A context with
    fewer than 2 sizes left after the hold-out is not fitted (a note says so).
    """
    notes: list[str] = []
    by_ctx: dict[tuple, list[tuple]] = {}
    for key in groups:
        by_ctx.setdefault(key[:6], []).append(key)
    entries: list[CollectiveEntry] = []
    held_out: list[dict[str, Any]] = []
    for ctx, keys in by_ctx.items():
        if len(keys) > 1:
            keys = [k for k in keys if k[6] == nvls] or keys[:1]
            notes.append(f"{ctx[0]} ranks={ctx[3]}: measured with and without NVLS; fitted the nvls={keys[0][6]} rows")
        rows = groups[keys[0]]
        fit_rows, held = split_holdout(rows, holdout)
        held_out.extend(held)
        if len({r['size_bytes'] for r in fit_rows}) < 2:
            notes.append(f"{ctx[0]} ranks={ctx[3]} mode={ctx[5]}: fewer than 2 sizes, not fitted")
            continue
        entries.append(fit_collective(fit_rows, max_segments=max_segments, min_sizes=min_sizes, ci=ci, rng=rng,
                                      switches=switches))
    return entries, held_out, notes
