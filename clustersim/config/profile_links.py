"""The link part of a calibration profile: link classes, collective entries and the fitted link model.

:class:`LinkParams` (the profile's ``links:``): per link class a latency and the achievable
fraction of the topology's line rate; :class:`CollectiveEntry` (``collectives:``): measured
collectives with piecewise :class:`Segment` fits; :class:`LinkModelParams` (``link_model:``):
NCCL's cost structure with learned link parameters. Also the vocabulary they share: the
collective names (:data:`OP_NAMES`), the link classes and the protocols. Part of
:class:`clustersim.config.profile.Profile`, which re-exports every name here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from clustersim.config.base import NonNeg, Pos, StrictModel, bounded


def _pair_from_list(value: Any) -> Any:
    # YAML has no tuples: a two-item list is the file's spelling of an interval (the items stay strict floats)
    return tuple(value) if isinstance(value, list) else value


Interval = Annotated[tuple[float, float], BeforeValidator(_pair_from_list)]

OP_NAMES = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
            "scatter", "gather", "send_recv", "barrier")
Op = Literal["broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
             "scatter", "gather", "send_recv", "barrier"]
LinkClass = Literal["nvlink", "pcie", "network"]


class LinkParams(StrictModel):
    """Learned parameters of one link class, per direction.

    The bandwidth a collective gets on this class is ``line rate x efficiency``, where the line
    rate is the topology's (per GPU for nvlink / pcie: the bottleneck of the route between two
    ranks; per NIC for network: the NIC, or the fabric cable when slower and crossed). Give
    either ``efficiency`` or the measured ``bandwidth_GBps`` together with the ``line_rate_GBps``
    it was measured on (efficiency = their ratio). ``line_rate_GBps`` also tells how far the
    profile's measured collective entries must be scaled on a topology of another line rate.
    A ``bandwidth_GBps`` without ``line_rate_GBps`` (an old profile, or ``calibrate fit`` without
    ``--topology``) is taken as measured on the topology it is used with: it does not follow a
    what-if on that class.

    >>> LinkParams(latency_us=3.4, bandwidth_GBps=370.8, line_rate_GBps=450).effective_GBps(225.0)
    185.4
    >>> LinkParams(latency_us=14, efficiency=0.96).effective_GBps(25.0)
    24.0
    """

    latency_us: NonNeg = Field(description="Per-hop latency seen by a collective step (protocol sync included), "
                               "microseconds.")
    efficiency: Pos | None = Field(
        None, le=1.0, description="Achievable fraction of the topology's line rate of this class (dimensionless, "
        "0-1]; what NCCL reaches per direction divided by the line rate).")
    bandwidth_GBps: Pos | None = Field(
        None, description="Measured effective per-direction bandwidth, GB/s (what NCCL reached on the hardware "
        "measured); with line_rate_GBps it defines the efficiency.")
    line_rate_GBps: Pos | None = Field(
        None, description="Line rate of this class on the hardware measured, GB/s per direction (provenance; the "
        "reference for scaling measured collective entries on a topology of another line rate).")
    latency_ci_us: Interval | None = Field(None, description="95% confidence interval of latency_us: [low, high], microseconds.")
    efficiency_ci: Interval | None = Field(None, description="95% confidence interval of efficiency: [low, high], fractions of line rate.")
    bandwidth_ci_GBps: Interval | None = Field(None, description="95% confidence interval of bandwidth_GBps: [low, high], GB/s.")

    @model_validator(mode="after")
    def _one_bandwidth(self) -> "LinkParams":
        if self.efficiency is None and self.bandwidth_GBps is None:
            raise ValueError("give efficiency (fraction of the topology's line rate) or bandwidth_GBps "
                             "with line_rate_GBps")
        if self.efficiency is not None and self.bandwidth_GBps is not None:
            raise ValueError("give efficiency or bandwidth_GBps, not both (one source per fact: the bandwidth "
                             "is the topology's line rate x efficiency)")
        if self.bandwidth_GBps is not None and self.line_rate_GBps is not None \
                and self.bandwidth_GBps > self.line_rate_GBps * (1 + 1e-9):
            raise ValueError(f"bandwidth_GBps {self.bandwidth_GBps:g} exceeds line_rate_GBps "
                             f"{self.line_rate_GBps:g} (efficiency above 1)")
        return self

    @property
    def scales(self) -> bool:
        """True when the effective bandwidth follows the topology's line rate (not a legacy absolute value)."""
        return self.efficiency is not None or self.line_rate_GBps is not None

    @property
    def fraction(self) -> float | None:
        """Efficiency as a fraction of line rate (given, or bandwidth / line rate); None for a legacy absolute value."""
        if self.efficiency is not None:
            return self.efficiency
        if self.line_rate_GBps is not None:
            return self.bandwidth_GBps / self.line_rate_GBps
        return None

    def effective_GBps(self, line_rate_GBps: float) -> float:
        """Effective per-direction bandwidth (GB/s) on a link of ``line_rate_GBps``: line rate x efficiency.

        Computed as ``bandwidth x (line rate / measured line rate)`` for the measured form, so the
        topology it was measured on gives back exactly the measured bandwidth.
        """
        if self.efficiency is not None:
            return line_rate_GBps * self.efficiency
        if self.line_rate_GBps is not None:
            return self.bandwidth_GBps * (line_rate_GBps / self.line_rate_GBps)
        return self.bandwidth_GBps


class Segment(StrictModel):
    """One size regime of a piecewise alpha-beta fit: t = alpha + S / algbw on [size_min, size_max)."""

    size_min_bytes: NonNeg = Field(0, description="Inclusive lower bound of the regime, bytes (nccl-tests size of the "
                                   "operation: all_gather/reduce_scatter the whole buffer, all_to_all each rank's send buffer).")
    size_max_bytes: float | None = Field(None, description="Exclusive upper bound, bytes; null = unbounded.")
    alpha_us: NonNeg = Field(description="Fixed cost of one call in this regime (microseconds).")
    algbw_GBps: Pos = Field(description="Algorithm bandwidth (size / time slope), GB/s.")
    alpha_ci_us: Interval | None = Field(None, description="95% confidence interval of alpha_us: [low, high], microseconds.")
    algbw_ci_GBps: Interval | None = Field(None, description="95% confidence interval of algbw_GBps: [low, high], GB/s.")
    points: int | None = Field(None, description="Measurements the fit used.")


class CollectiveEntry(StrictModel):
    """Calibrated cost of one operation in a context. ``null`` keys match anything."""

    op: Op = Field(description="Collective operation (nccl-tests names with underscores: all_reduce, all_gather, ...).")
    algorithm: str | None = Field(None, description="ring, tree, nvls, ... or null for 'whatever NCCL chose'.")
    protocol: Literal["ll", "ll128", "simple"] | None = Field(
        None, description="NCCL protocol (NCCL_PROTO) the entry was measured with; null for 'whatever NCCL chose'.")
    ranks: bounded("gpus") | None = Field(None, description="Rank count; null matches any.")
    scope: Literal["intra", "inter"] | None = Field(None, description="intra: one node; inter: several nodes.")
    mode: Literal["nccl", "eager", "framework"] = Field(
        "nccl", description="nccl: library-level time (nccl-tests, CUDA-graph replay); eager: back-to-back "
        "torch.distributed calls (host launch rate bound at small sizes); framework: one isolated call.")
    segments: list[Segment] = Field(min_length=1, description="Piecewise alpha-beta fit, one segment per size regime, "
                                    "sorted by size_min_bytes.")
    extrapolated: bool = Field(False, description="Fitted on fewer ranks/sizes than it is applied to.")

    @model_validator(mode="after")
    def _ordered(self) -> "CollectiveEntry":
        lo = -1.0
        for s in self.segments:
            if s.size_min_bytes < lo:
                raise ValueError("segments must be sorted by size_min_bytes")
            if s.size_max_bytes is not None and s.size_max_bytes <= s.size_min_bytes:
                raise ValueError("segment size_max_bytes must exceed size_min_bytes")
            lo = s.size_min_bytes
        return self


Protocol = Literal["ll", "ll128", "simple"]
#: operations the link model describes (NCCL's table collectives and the point-to-point ones)
LinkModelOp = Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv"]


class ProtocolLink(StrictModel):
    """What one protocol reaches on one link class (link model)."""

    efficiency: Pos = Field(le=1.0, description="Bus bandwidth the protocol reaches as a fraction of the "
                            "topology's line rate of the class (dimensionless, (0, 1]).")
    latency_us: NonNeg = Field(description="Latency of one ring step on this class (NCCL's hwLat), microseconds.")


class LinkModelOpParams(StrictModel):
    """Per-operation parameters of the link model."""

    floor_us: NonNeg = Field(description="Launch floor of one call (beyond the protocol's base latency), "
                             "microseconds.")
    op_efficiency: Pos = Field(1.0, description="Bandwidth relative to the link's (dimensionless factor); 1 for "
                               "the collectives of NCCL's table, fitted for all_to_all and send_recv.")
    local_GBps: Pos | None = Field(None, description="Rate of the rank's work on its own 1/n chunk (out-of-place "
                                   "copy, reduction), GB/s of chunk bytes; null: the op has none.")
    startup_depth: float = Field(0.0, ge=0.0, lt=1.0, description="Depth of the call's start-up transient on two "
                                 "ranks (dimensionless, [0, 1)): the channels of LL128 and Simple start at 1 - depth "
                                 "of their rate (2 / n of the depth on n ranks); 0: none.")


class LinkModelProvenance(StrictModel):
    """Where a link model's parameters were learned."""

    files: list[str] = Field(default_factory=list, description="Raw measurement files of the fit (relative to "
                             "calibrate/).")
    rows: int = Field(ge=1, description="Collective rows (count) the fit used.")
    ranks: list[int] = Field(default_factory=list, description="Rank counts of those rows.")
    nodes: list[int] = Field(default_factory=list, description="Node counts of those rows.")
    line_rates_GBps: dict[LinkClass, Pos] = Field(
        default_factory=dict, description="Line rate of each class on the hardware measured, GB/s per direction "
        "(per GPU for nvlink / pcie, per NIC for network).")
    nics_per_node: int | None = Field(None, ge=1, description="Network NICs per node on the hardware measured "
                                      "(count; with the network line rate, the node's rate to the network); "
                                      "null: no network class was measured.")
    residual_median_pct: NonNeg | None = Field(None, description="Median |model / measured - 1| at the fit rows, "
                                               "percent.")
    residual_worst_pct: NonNeg | None = Field(None, description="Largest |model / measured - 1| at the fit rows, "
                                              "percent.")
    method: str | None = Field(None, description="How the fit was made (free text).")


class LinkModelParams(StrictModel):
    """The fitted link model: NCCL's cost structure with learned link parameters (docs/calibration.md).

    Per link class and protocol an efficiency of the topology's line rate and a per-step
    latency; per protocol NCCL's base latency; per operation a launch floor, the own-chunk
    rate, the depth of the call's start-up transient (one time constant, ``startup_us``) and
    (point-to-point) a relative efficiency. A class left out was not measured (the
    network of a one-node fit): communicators crossing it do not use the link model.

    >>> p = {"efficiency": 0.8, "latency_us": 3.4}
    >>> LinkModelParams(links={"nvlink": {"ll": p, "ll128": p, "simple": p}},
    ...                 base_us={"ll": 6.6, "ll128": 14.0, "simple": 8.4}, ops={"send_recv": {"floor_us": 2.0}},
    ...                 provenance={"rows": 10}).intra_class
    'nvlink'
    """

    links: dict[LinkClass, dict[Protocol, ProtocolLink]] = Field(
        min_length=1, description="Per link class (nvlink or pcie for the intra-node class, network) and protocol "
        "(ll, ll128, simple): efficiency of line rate and latency per ring step.")
    base_us: dict[Protocol, NonNeg] = Field(description="NCCL's base latency of one call per protocol (baseLat), "
                                            "microseconds.")
    ops: dict[LinkModelOp, LinkModelOpParams] = Field(min_length=1, description="Per-operation parameters; an "
                                                      "operation left out uses the other models.")
    startup_us: Pos = Field(1000.0, description="Time constant of the start-up transient (the ops' "
                            "startup_depth), microseconds.")
    provenance: LinkModelProvenance = Field(description="Files, rows, rank and node counts, line rates and fit "
                                            "residual of the fit.")

    @model_validator(mode="after")
    def _complete(self) -> "LinkModelParams":
        protos = {"ll", "ll128", "simple"}
        for cls, per in self.links.items():
            if set(per) != protos:
                raise ValueError(f"links.{cls} needs all three protocols ll, ll128, simple "
                                 f"(missing {', '.join(sorted(protos - set(per)))})")
        if set(self.base_us) != protos:
            raise ValueError(f"base_us needs ll, ll128 and simple (missing {', '.join(sorted(protos - set(self.base_us)))})")
        if "nvlink" in self.links and "pcie" in self.links:
            raise ValueError("links: one intra-node class (nvlink or pcie), not both: a fit learns the class its rows ran on")
        return self

    @property
    def intra_class(self) -> str | None:
        """The intra-node class the model learned (nvlink or pcie), None for a network-only model."""
        return next((c for c in ("nvlink", "pcie") if c in self.links), None)
