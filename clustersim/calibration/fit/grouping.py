"""Which measurements are fitted together: the fit context of a collective row, and the hold-out split.

A context is (op, algorithm, protocol, ranks, scope, mode, nvls); each gets one
:class:`~clustersim.config.profile.CollectiveEntry`. ``calibrate report`` uses
the same grouping and split to check a fit against the sizes it did not see.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from clustersim.errors import ClusterSimError

COLLECTIVE_KEY = ("op", "algorithm", "protocol", "ranks", "scope", "mode")
HOLDOUTS = ("none", "even", "odd")


def collective_key(row: dict[str, Any]) -> tuple:
    """The fit context of a collective row: (op, algorithm, protocol, ranks, scope, mode, nvls)."""
    return (row["op"], row.get("algorithm"), row.get("protocol"), row.get("ranks"), row.get("scope"),
            row.get("mode", "nccl"), bool(row.get("nvls") or False))


def group_collectives(rows: Iterable[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """Collective rows grouped by :func:`collective_key`, in a stable (sorted) order."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        if r["kind"] == "collective":
            groups.setdefault(collective_key(r), []).append(r)
    return {k: groups[k] for k in sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k))}


def split_holdout(rows: Sequence[dict[str, Any]], holdout: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split one group's rows into (fit, held-out) by the index of their size.

    The distinct sizes of the group are sorted; ``holdout="odd"`` holds out the
    sizes at odd positions (1st, 3rd, ... counting from 0), ``"even"`` those at
    even positions, ``"none"`` nothing. Every row of a size goes to the same side.

    >>> rows = [{"size_bytes": s} for s in (8, 16, 32, 64)]
    >>> [r["size_bytes"] for r in split_holdout(rows, "odd")[1]]
    [16, 64]
    """
    if holdout not in HOLDOUTS:
        raise ClusterSimError(f"--holdout must be one of {', '.join(HOLDOUTS)}, got {holdout!r}")
    if holdout == "none":
        return list(rows), []
    sizes = sorted({float(r["size_bytes"]) for r in rows})
    index = {s: i for i, s in enumerate(sizes)}
    parity = 1 if holdout == "odd" else 0
    fit, held = [], []
    for r in rows:
        (held if index[float(r["size_bytes"])] % 2 == parity else fit).append(r)
    return fit, held
