"""The breakdown vocabulary: the parts a simulated step's time splits into, and which part a collective's time is.

One list on the bottom floor of the package (it imports nothing of it), read by the three
layers that speak of the parts: the simulator fills them
(:func:`clustersim.simulate.execute.breakdown`), a sweep writes one column per part
(:mod:`clustersim.sweep.point`) and a report colours them (:mod:`clustersim.report.kinds`).

>>> BREAKDOWN_KEYS[:3]
('compute', 'comm_dp', 'comm_tp')
>>> exposed_comm_part("pp"), exposed_comm_part("etp"), inner_comm_part("etp"), inner_comm_part("tp")
('comm_pp', 'other', 'comm_ep', 'comm_tp')
"""

from __future__ import annotations

#: every part of a step's breakdown, in the order a result lists them: compute, the exposed
#: communication of each parallel axis, the pipeline bubble, the optimizer, the host's issue
#: time and what is left (``other``: after the rank's last op up to the step's end)
BREAKDOWN_KEYS = ("compute", "comm_dp", "comm_tp", "comm_pp", "comm_ep", "comm_cp", "bubble", "optimizer", "host",
                  "other")

#: parallel axes whose exposed communication is a part of its own, ``comm_<axis>``
COMM_AXES = ("dp", "tp", "pp", "ep", "cp")

#: axes of the collectives inside an MoE layer (dispatch/combine, the expert-TP collectives and the
#: node-limited dispatch's two hops): their time inside a compute op counts as ``comm_ep``
EP_AXES = ("ep", "etp", "ep_inter", "ep_intra")

def exposed_comm_part(axis: str) -> str:
    """The part that idle time waiting on a collective of ``axis`` counts as: ``comm_<axis>`` for an
    axis of :data:`COMM_AXES`, else ``other`` (a generic job's collectives on their own axes)."""
    return "comm_" + axis if axis in COMM_AXES else "other"


def inner_comm_part(axis: str) -> str:
    """The part that the exposed time of a collective inside a compute op counts as: ``comm_ep`` for
    the MoE collectives (:data:`EP_AXES`), ``comm_cp`` for the context-parallel K/V exchange,
    ``comm_tp`` otherwise (the tensor-parallel collectives between a layer's GEMMs)."""
    if axis == "cp":
        return "comm_cp"
    return "comm_ep" if axis in EP_AXES else "comm_tp"
