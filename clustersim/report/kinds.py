"""The kinds of ops a report draws: colour, legend label, and which breakdown key maps to which kind.

One vocabulary for the timeline data (:mod:`clustersim.report.timeline`), its SVG
(:mod:`clustersim.report.svg`) and the page (:mod:`clustersim.report.html`); the breakdown's
parts are the simulator's own (:mod:`clustersim.breakdown`).
"""

from clustersim.breakdown import BREAKDOWN_KEYS

# colour of each op kind (trace category); "idle" is the compute stream waiting (bubble / exposed comm)
KIND_COLORS = {
    "compute": "#4e79a7",
    "optimizer": "#8c6bb1",
    "host": "#b07aa1",
    "comm_tp": "#f28e2b",
    "comm_dp": "#59a14f",
    "comm_pp": "#e15759",
    "comm_ep": "#edc948",
    "comm_cp": "#9c755f",
    "job": "#76b7b2",
    "idle": "#d9d9d9",
    "other": "#bab0ac",
}
KIND_LABELS = {
    "compute": "compute",
    "optimizer": "optimizer",
    "host": "host (CPU issue)",
    "comm_tp": "TP communication",
    "comm_dp": "DP communication",
    "comm_pp": "PP communication",
    "comm_ep": "EP communication (MoE dispatch/combine)",
    "comm_cp": "CP communication (context-parallel K/V exchange)",
    "job": "job collective",
    "idle": "idle (bubble / waiting)",
    "other": "other",
}
#: breakdown part (:data:`clustersim.breakdown.BREAKDOWN_KEYS`, in its order) -> colour kind: each part is the
#: kind of its name, except the bubble, which is the compute stream idle
BREAKDOWN_KIND = {k: "idle" if k == "bubble" else k for k in BREAKDOWN_KEYS}


#: host share of the step from which a report flags the step as host-bound (a display rule, not a model parameter)
HOST_BOUND_SHARE = 1 / 3


def host_bound_note(d: dict) -> str | None:
    """The line a report adds when the host issue is a third of the step or more (``d``: a run result's dict).

    >>> host_bound_note({"breakdown_fraction": {"host": 0.5}}).startswith("host-bound: 50 %")
    True
    >>> host_bound_note({"breakdown_fraction": {"compute": 0.9, "host": 0.1}}) is None
    True
    """
    host = (d.get("breakdown_fraction") or {}).get("host", 0.0)
    if host < HOST_BOUND_SHARE:
        return None
    return (f"host-bound: {100 * host:.0f} % of the step waits for the CPU that issues its kernels; such a step follows "
            "the host's own speed (2x on the cloud VMs measured, docs/validation.md 6n): `--band` gives its range, "
            "faults.stragglers[].host_slowdown a slower host")

