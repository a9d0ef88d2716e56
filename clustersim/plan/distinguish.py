"""Which plans the evidence can tell apart from the best, and which input could swap them.

A plan's band is its run's evidence band (:mod:`clustersim.simulate.evidence`). A plan whose band overlaps
the best plan's is *not distinguishable* from it: within what the profile's entries are known to, either
could be the faster. For each plan the one-parameter sensitivity names the input that alone could swap it
with the best: the entry whose held-out error moves the two steps apart by the most (the difference of the
seconds each rests on it, times the error), where that exceeds the gap between them.
"""

from __future__ import annotations

from clustersim.plan.result import Plan


def plan_evidence(ev: dict | None) -> dict:
    """What a plan keeps of its run's evidence: the step's classes, the band's half-width, the summary line
    and the entries' shares and errors (the sensitivity).

    >>> plan_evidence({"step": {"measured": 1.0}, "band": {"half_width": 0.05}, "summary": "s",
    ...                "sensitivity": [{"entry": "compute.gemm_table", "share": 1.0, "error": 0.05, "moves": 0.05}]})["half_width"]
    0.05
    """
    if not ev:
        return {}
    return {"step": dict(ev["step"]), "half_width": ev["band"]["half_width"], "summary": ev["summary"],
            "sensitivity": [dict(e) for e in ev.get("sensitivity", [])]}


def swap_input(best: Plan, other: Plan) -> str | None:
    """The entry whose held-out error alone could make ``other`` at least as fast as ``best`` (None: none)."""
    gap = other.step_time_s - best.step_time_s
    if gap <= 0:
        return None
    mine = {e["entry"]: e for e in other.evidence.get("sensitivity", [])}
    theirs = {e["entry"]: e for e in best.evidence.get("sensitivity", [])}
    moves = {}
    for entry in set(mine) | set(theirs):
        a, b = mine.get(entry), theirs.get(entry)
        err = (a or b)["error"]
        sec_other = (a["share"] * other.step_time_s) if a else 0.0
        sec_best = (b["share"] * best.step_time_s) if b else 0.0
        moves[entry] = abs(sec_other - sec_best) * err
    if not moves:
        return None
    entry, dt = max(moves.items(), key=lambda kv: (kv[1], kv[0]))
    return entry if dt >= gap else None


def mark_distinguishable(plans: list[Plan]) -> None:
    """Mark, in place, every plan whose band overlaps the first (best) plan's as not distinguishable from it,
    and name for each the input that could swap it with the best."""
    if not plans:
        return
    best = plans[0]
    _, best_hi = best.band_s
    for p in plans[1:]:
        p.distinguishable = p.band_s[0] > best_hi
        p.could_swap = swap_input(best, p)
