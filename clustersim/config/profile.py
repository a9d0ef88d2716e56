"""The calibration profile: the contract between collectives, training and calibration.

A profile says how fast the hardware really is: per link class (nvlink, pcie,
network) a latency and the achievable fraction of the topology's line rate (the
topology holds the line rates: one source per fact, so a what-if on the topology moves
every prediction; docs/calibration.md "One source of bandwidth"); collective entries
(per operation, algorithm, protocol, rank count, scope and size regime) with
alpha, bandwidth and their confidence intervals; host-side overheads; compute
(GEMM efficiency, HBM bandwidth, kernel launch).

Lookup (in ``clustersim.collectives.formulas``) takes the most specific matching
collective entry and falls back to the link-class model.

This module holds the profile itself, its provenance and its held-out uncertainty; its parts
are modules of their own, every name re-exported here: the links, collective entries and link
model :mod:`clustersim.config.profile_links`, the host costs :mod:`clustersim.config.profile_host`
and the compute tables :mod:`clustersim.config.profile_compute`.
"""

from __future__ import annotations

from pydantic import Field

from clustersim.config.base import StrictModel
from clustersim.config.profile_compute import (
    AttentionPoint,
    BmmPoint,
    ClockPoint,
    ComputeParams,
    GemmLayoutPoint,
    GemmPoint,
    MemoryPoint,
    OverlapPoint,
    P2PWaitPoint,
    TransferInfo,
)
from clustersim.config.profile_host import CommInit, HostParams, HostSpeedBand, OptimizerHost
from clustersim.config.provenance import Provenance
from clustersim.config.profile_links import (
    OP_NAMES,
    CollectiveEntry,
    LinkClass,
    LinkModelOpParams,
    LinkModelParams,
    LinkModelProvenance,
    LinkParams,
    ProtocolLink,
    Segment,
)

__all__ = [
    "OP_NAMES", "AttentionPoint", "BmmPoint", "ClockPoint", "CollectiveEntry", "CollectiveUncertainty", "CommInit",
    "ComputeParams", "GemmLayoutPoint", "GemmPoint", "HostParams", "HostSpeedBand", "LinkModelOpParams",
    "LinkModelParams", "LinkModelProvenance", "LinkParams", "MemoryPoint", "OptimizerHost", "OverlapPoint",
    "P2PWaitPoint", "Profile", "ProtocolLink", "Segment", "Source", "TransferInfo",
]


class Source(StrictModel):
    """Where the numbers came from."""

    gpu: str | None = Field(None, description="GPU model, e.g. 'NVIDIA H200'.")
    host: str | None = Field(None, description="Host name(s) or system name.")
    driver: str | None = Field(None, description="NVIDIA driver version while measuring, e.g. '580.159.04'.")
    nccl_version: str | None = Field(None, description="NCCL library version the collectives ran on, e.g. '2.21.5'.")
    torch_version: str | None = Field(None, description="PyTorch version of the bench, e.g. '2.11.0+cu130'.")
    date: str | None = Field(None, description="ISO date of the measurement.")
    nvls: bool | None = Field(None, description="Whether NVLink multicast (NVLS) was enabled while measuring.")
    measured: bool = Field(False, description="True when fitted from measurements on this hardware; false for published/derived values.")
    files: list[str] = Field(default_factory=list, description="Raw measurement files the fit used (relative to calibrate/).")
    notes: str | None = Field(None, description="Free text: how the numbers were obtained, caveats.")


class CollectiveUncertainty(StrictModel):
    """How far the profile's collective predictions were off on measurements it was not built from.

    ``time_factor`` is the 95% quantile of ``|log(predicted / measured)|`` over held-out
    collective measurements, as a factor: a prediction ``t`` is expected within
    ``[t / time_factor, t x time_factor]`` for that share of calls. `clustersim run --band`
    moves every link class and collective entry by this factor (latency up, efficiency down,
    and the reverse), at both fidelities.

    >>> CollectiveUncertainty(time_factor=1.67, held_out_points=138).coverage
    0.95
    """

    time_factor: float = Field(ge=1.0, description="Factor f of the band [t / f, t x f] around a predicted "
                               "collective time t (a ratio, >= 1).")
    coverage: float = Field(0.95, gt=0.0, lt=1.0, description="Share of the held-out points the factor covers "
                            "(fraction, 0-1): the quantile it was taken at.")
    held_out_points: int = Field(ge=1, description="Number of held-out collective measurements (count) "
                                 "behind the factor.")
    method: str | None = Field(None, description="Which measurements were held out and how they were predicted.")


class Profile(StrictModel):
    """A calibration profile file."""

    name: str = Field(description="Profile name (the file's bare name, what cluster.profile and default_profile take).")
    description: str | None = Field(None, description="One line: hardware and what was measured.")
    source: Source = Field(default_factory=Source, description="Provenance: GPU, host, software versions and raw files "
                           "of the measurements.")
    links: dict[LinkClass, LinkParams] = Field(
        default_factory=dict, description="Learned link-class parameters: latency and efficiency of the topology's "
        "line rate (a class left out uses NCCL's own constants).")
    nvls: bool = Field(False, description="Default for in-network reduction (NVLS) when the scenario leaves nvls null.")
    link_model: LinkModelParams | None = Field(
        None, description="Fitted link model (profiles/make_profiles.py): used for collectives without a matching "
        "entry on communicators whose link classes it learned; none: the link-class model.")
    collectives: list[CollectiveEntry] = Field(default_factory=list, description="Calibrated collective entries; "
                                               "lookup takes the most specific match, else the link-class model.")
    host: HostParams = Field(default_factory=HostParams, description="Host-side costs (framework call overhead, "
                             "communicator start-up).")
    compute: ComputeParams = Field(default_factory=ComputeParams, description="GPU compute model (GEMM, attention, "
                                   "memory-bound kernels, launch gap, sustained clock).")
    uncertainty: CollectiveUncertainty | None = Field(
        None, description="Held-out error of the collective predictions (run --band); none: only the "
        "confidence intervals of the fitted entries.")
    provenance: list[Provenance] = Field(
        default_factory=list, description="How each entry is known (clustersim/config/provenance.py): measured, "
        "fitted, transferred, published or assumed, with its held-out error; the evidence and band of a run read it.")

    def with_line_rates(self, line_rates_GBps: dict[str, float | None]) -> "Profile":
        """A copy whose link classes given as a bare ``bandwidth_GBps`` record the line rate they were measured on.

        ``line_rates_GBps``: per link class, the line rate (GB/s per direction) of the hardware
        measured (e.g. :meth:`clustersim.topology.Cluster.class_line_rate` / 1e9). Classes with an
        efficiency or a line rate already, and classes without a rate here, are left as they are.

        >>> p = Profile(name="x", links={"nvlink": {"latency_us": 3.4, "bandwidth_GBps": 370.8}})
        >>> round(p.with_line_rates({"nvlink": 450.0}).links["nvlink"].fraction, 3)
        0.824
        """
        links = {}
        for cls, lp in self.links.items():
            rate = line_rates_GBps.get(cls)
            if lp.scales or not rate:
                links[cls] = lp
            else:
                links[cls] = LinkParams.model_validate({**lp.model_dump(exclude_none=True), "line_rate_GBps": rate})
        return self.model_copy(update={"links": links})
