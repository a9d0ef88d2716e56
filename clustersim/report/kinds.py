"""The kinds of ops a report draws: colour, legend label, and which breakdown key maps to which kind.

One vocabulary for the timeline data (:mod:`clustersim.report.timeline`), its SVG
(:mod:`clustersim.report.svg`) and the page (:mod:`clustersim.report.html`).
"""

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
# breakdown keys (clustersim.simulate.run.BREAKDOWN_KEYS) -> colour kind
BREAKDOWN_KIND = {"compute": "compute", "comm_dp": "comm_dp", "comm_tp": "comm_tp", "comm_pp": "comm_pp",
                  "comm_ep": "comm_ep", "comm_cp": "comm_cp", "bubble": "idle", "optimizer": "optimizer", "host": "host", "other": "other"}
