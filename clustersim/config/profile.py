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
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PositiveInt, field_validator, model_validator

from clustersim.config.base import StrictModel, bounded

Pos = Annotated[float, Field(gt=0)]
NonNeg = Annotated[float, Field(ge=0)]


def _pair_from_list(value: Any) -> Any:
    # YAML has no tuples: a two-item list is the file's spelling of an interval (the items stay strict floats)
    return tuple(value) if isinstance(value, list) else value


Interval = Annotated[tuple[float, float], BeforeValidator(_pair_from_list)]

OP_NAMES = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
            "scatter", "gather", "send_recv", "barrier")
Op = Literal["broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
             "scatter", "gather", "send_recv", "barrier"]
LinkClass = Literal["nvlink", "pcie", "network"]


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


class CommInit(StrictModel):
    """Communicator start-up: time = base_s + per_rank_s * ranks (+ per_node_s * nodes)."""

    base_s: NonNeg = Field(0.0, description="Start-up time independent of the rank count, seconds.")
    per_rank_s: NonNeg = Field(0.0, description="Start-up time added per rank, seconds.")
    per_node_s: NonNeg = Field(0.0, description="Start-up time added per node, seconds (calibrate fit does not fit "
                               "it yet and leaves 0).")
    extrapolated: bool = Field(True, description="True when measured on fewer ranks than it is applied to.")
    measured_ranks: list[int] = Field(default_factory=list, description="Rank counts the fit saw (comm_init rows).")


class OptimizerHost(StrictModel):
    """Host time of one optimizer step: ``base_us + per_tensor_us x parameter tensors`` (microseconds)."""

    base_us: NonNeg = Field(description="Host time independent of the tensor count, microseconds.")
    per_tensor_us: NonNeg = Field(description="Host time per parameter tensor of the rank, microseconds.")


class HostSpeedBand(StrictModel):
    """How far the host's own speed moved a host-bound step between runs on the machine the profile describes.

    ``time_factor`` is the 95% quantile of ``|log(predicted / measured)|`` over repeated runs of the FSDP2 host probe
    program (a step its host issues, the GPU waiting: calibrate/host7_configs.txt) on VMs of that machine: a cloud
    VM's vCPU ran the same CPU work up to 2x slower from minute to minute (docs/validation.md 6n). `clustersim run
    --band` moves every op's host issue time by it (kernel and collective calls, FSDP2 hooks, the optimizer: x f on
    the slow side, / f on the fast side), so a host-bound step gets a band and a GPU-bound one hardly moves.

    >>> HostSpeedBand(time_factor=1.3, runs=13).coverage
    0.95
    """

    time_factor: float = Field(ge=1.0, description="Factor f: every host issue time x f (slow) and / f (fast) in the "
                               "band (a ratio, >= 1).")
    coverage: float = Field(0.95, gt=0.0, lt=1.0, description="Quantile the factor was taken at (fraction, 0-1).")
    runs: int = Field(ge=1, description="Runs of the host probe program behind the factor (count).")
    method: str | None = Field(None, description="Which runs, on how many VMs, and how they were predicted.")


class HostParams(StrictModel):
    """Host-side costs the GPU may wait for."""

    per_call_overhead_us: NonNeg = Field(8.0, description="CPU time to issue one collective/kernel through the framework (torch.distributed), microseconds.")
    framework_call_us: NonNeg | None = Field(None, description="Measured framework-level time of one small collective on an idle GPU (launch included), microseconds.")
    fsdp_hook_us: NonNeg | dict[PositiveInt, NonNeg] | None = Field(None, description=(
        "Host CPU time of one FSDP2 hook of one unit (the pre-forward all-gather, the pre-backward all-gather "
        "or the post-backward reduce-scatter: its Python and DTensor work, the collective call and copy kernels "
        "it issues) beyond the unit's own compute kernels, microseconds; measured by the host probe "
        "(calibrate/fsdp_hook.py) on the machine the profile describes. A number: at every shard-group size; "
        "a mapping shard-group size (ranks) -> microseconds: measured at those sizes (the hook's host work grows "
        "with the ranks it shards over: 2 -> 4 ranks +20% on one H200 VM), interpolated in log2(ranks) "
        "between them and the nearest measured size outside them (not extrapolated). None: one "
        "per_call_overhead_us call plus (2 + 2 x the unit's tensors) kernel issues per hook."))
    fsdp_optimizer_us: OptimizerHost | None = Field(None, description=(
        "Host CPU time of optimizer.step() over FSDP2's sharded DTensor parameters (torch's foreach AdamW): "
        "measured from the optimizer call's host window in FSDP2 training runs on the machine the profile "
        "describes (calibrate/train_gpt.py optimizer_host_s_ranks; calibrate/fsdp_hook.py fits base + per tensor "
        "over every rank's median window). None: one dispatch per tensor and foreach operation (9 for AdamW), "
        "an upper bound: the measured H100 and H200 hosts run 3-5x faster."))
    first_collective_us: NonNeg | dict[PositiveInt, NonNeg] | None = Field(None, description=(
        "GPU-side time the first collective of a freshly created NCCL communicator adds after a preceding kernel "
        "(NCCL >= 2.22 connects its peers and loads the collective's kernel at the first call; the part that runs on "
        "the host while the kernel still runs is hidden), microseconds, per communicator size (ranks) as in "
        "fsdp_hook_us; measured (calibrate/device/first_collective.py, calibrate/device/pi/strong_scaling.py). "
        "Charged to generic jobs timed from fresh communicators (job.fresh_communicators), not to training steps "
        "(the steady state after warm-up). None: not measured, no cost."))
    speed_band: HostSpeedBand | None = Field(None, description=(
        "How much the host's own speed varied between runs of the host probe program on this machine (measured; "
        "None: not measured, `run --band` leaves host costs as they are)."))
    comm_init: CommInit = Field(default_factory=CommInit, description="Communicator start-up cost (init_process_group "
                                "to the first completed collective); reported by calibrate fit, not part of a step.")

    @field_validator("fsdp_hook_us", "first_collective_us", mode="before")
    @classmethod
    def _rank_keys(cls, v):
        # JSON and some YAML writers turn the integer rank keys into strings ("2": ...): read them back;
        # a mapping is checked here so that its error names the key, not the number branch of the union
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                r = int(k) if isinstance(k, str) and k.strip().isdigit() else k
                if isinstance(r, bool) or not isinstance(r, int) or r < 1:
                    raise ValueError(f"keys are group sizes (ranks, integers >= 1), got {k!r}")
                if isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0:
                    raise ValueError(f"values are microseconds >= 0, got {x!r} for {r} ranks")
                out[r] = float(x)
            if not out:
                raise ValueError("an empty mapping: give at least one {ranks: microseconds}")
            return out
        return v

    def fsdp_hook_us_at(self, ranks: int) -> float | None:
        """``fsdp_hook_us`` for a shard group of ``ranks`` (see the field's description).

        >>> h = HostParams(fsdp_hook_us={2: 1000.0, 8: 1400.0})
        >>> h.fsdp_hook_us_at(4), h.fsdp_hook_us_at(1), h.fsdp_hook_us_at(64)
        (1200.0, 1000.0, 1400.0)
        >>> HostParams(fsdp_hook_us=900.0).fsdp_hook_us_at(16)
        900.0
        """
        return _per_ranks(self.fsdp_hook_us, ranks)

    def first_collective_us_at(self, ranks: int) -> float | None:
        """``first_collective_us`` for a communicator of ``ranks`` (interpolated as :meth:`fsdp_hook_us_at`).

        >>> HostParams(first_collective_us={2: 10000.0, 4: 12600.0}).first_collective_us_at(8)
        12600.0
        """
        return _per_ranks(self.first_collective_us, ranks)


def _per_ranks(v, ranks: int) -> float | None:
    """A number, or a {ranks: value} mapping interpolated in log2(ranks), clamped at its ends (no extrapolation).

    >>> _per_ranks({2: 1.0, 8: 4.0}, 4), _per_ranks(3.0, 64), _per_ranks(None, 2)
    (2.5, 3.0, None)
    """
    if v is None or not isinstance(v, dict):
        return v
    pts = sorted(v.items())
    r = max(int(ranks), 1)
    if r <= pts[0][0]:
        return float(pts[0][1])
    if r >= pts[-1][0]:
        return float(pts[-1][1])
    for (r0, u0), (r1, u1) in zip(pts, pts[1:]):
        if r0 <= r <= r1:
            w = (math.log2(r) - math.log2(r0)) / (math.log2(r1) - math.log2(r0))
            return float(u0 + w * (u1 - u0))
    return float(pts[-1][1])  # unreachable: the ranges above cover every r


class GemmPoint(StrictModel):
    """Measured GEMM efficiency at one problem size."""

    m: int = Field(gt=0, description="Rows of A and C in C = A @ B (A is m x k), elements.")
    n: int = Field(gt=0, description="Columns of B and C (B is k x n), elements.")
    k: int = Field(gt=0, description="Reduction dimension (columns of A, rows of B), elements.")
    efficiency: Pos = Field(description="Achieved / peak dense FLOP/s of the dtype (FLOPs = 2 m n k); fraction.")


class AttentionPoint(StrictModel):
    """Measured flash-attention efficiency (``calibrate bench --kernels``) at one shape and pass.

    ``efficiency`` = FLOPs / (peak x kernel time) with the simulator's count: forward
    ``4 b heads s^2 head_dim x 0.5`` (causal half), backward 2.5 x that.
    """

    direction: Literal["fwd", "bwd"] = Field(description="fwd or bwd (bwd time = fwd+bwd time - fwd time).")
    seq: int = Field(gt=0, description="Sequence length, tokens.")
    head_dim: int = Field(gt=0, description="Size of one attention head, elements.")
    heads: int = Field(gt=0, description="Attention (query) heads in the call.")
    batch: int = Field(gt=0, description="Sequences in the call.")
    efficiency: Pos = Field(le=1.0, description="FLOPs (the count above) / (dense peak x kernel time); fraction, <= 1.")


class BmmPoint(StrictModel):
    """Measured efficiency of one batched GEMM of an eager (non-flash) attention core
    (``calibrate/device/attention_bmm.py``): ``batch_heads`` slices of sequence ``seq`` and head size
    ``head_dim`` (shapes: :func:`clustersim.roofline.bmm_shape`)."""

    kind: Literal["score", "context", "context_t"] = Field(
        description="score: q k^T (s x d @ d x s); context: p v (s x s @ s x d); context_t: p^T dO (A transposed).")
    batch_heads: int = Field(gt=0, description="Slices in the call: micro-batch x attention heads on the rank.")
    seq: int = Field(gt=0, description="Sequence length, tokens.")
    head_dim: int = Field(gt=0, description="Size of one attention head, elements.")
    efficiency: Pos = Field(le=1.0, description="2 x batch_heads x m n k / (dense peak x kernel time); fraction, <= 1.")


class GemmLayoutPoint(StrictModel):
    """Measured efficiency of one training GEMM of a linear layer ``W: (out_features, in_features)``.

    ``layout``: NT forward ``x @ W^T``, NN dgrad ``dy @ W``, TN wgrad ``dy^T @ x`` (``tokens`` rows of x).
    """

    layout: Literal["NT", "NN", "TN"] = Field(description="NT forward, NN input gradient (dgrad), TN weight gradient (wgrad).")
    tokens: int = Field(gt=0, description="Rows of x: tokens in the call.")
    out_features: int = Field(gt=0, description="Output features of the layer (rows of W), elements.")
    in_features: int = Field(gt=0, description="Input features of the layer (columns of W), elements.")
    efficiency: Pos = Field(le=1.0, description="Achieved / peak dense FLOP/s of the dtype (FLOPs = 2 tokens "
                            "out_features in_features); fraction, <= 1.")


class MemoryPoint(StrictModel):
    """Measured efficiency of one memory-bound kernel class at one size.

    ``efficiency`` = (minimum HBM bytes of the op / kernel time) / ``hbm_bandwidth_GBps`` (the copy
    bandwidth); ``bytes`` is that minimum traffic (each tensor read or written once; AdamW: read
    param, grad, exp_avg, exp_avg_sq and write param, exp_avg, exp_avg_sq).
    """

    op: Literal["layernorm_fwd", "layernorm_bwd", "gelu_fwd", "gelu_bwd", "add", "cross_entropy", "adamw",
                "rmsnorm_fwd", "rmsnorm_bwd", "rope", "swiglu", "repeat_kv", "eager_attention_fwd",
                "eager_attention_bwd"] = Field(description="Memory-bound kernel class (bench --kernels names).")
    bytes: Pos = Field(description="Minimum HBM traffic of one call (each tensor read or written once), bytes.")
    efficiency: Pos = Field(description="(bytes / kernel time) / hbm_bandwidth_GBps; fraction (may exceed 1 where "
                            "caches serve part of the traffic).")
    hidden: Annotated[int, Field(gt=0)] | None = Field(
        None, description="Row length (elements) of a row-wise kernel (the norms), whose efficiency at equal bytes "
        "depends on it (H200 layernorm backward, 50 MB: 0.41 at 4,096, 0.22 at 1,024); the compute model reads the "
        "points of the nearest row length. None: the class is read by bytes alone.")


class ClockPoint(StrictModel):
    """Sustained slowdown of compute-bound kernels at one compute duty (bench ``gemm_duty`` rows).

    ``duty``: fraction of GPU time in compute-bound kernels (GEMMs alternating with a memory-bound
    copy); ``slowdown``: sustained GEMM time over its burst time (the clock the power limit allows).
    """

    duty: Pos = Field(..., le=1.0, description="Fraction of GPU time spent in compute-bound kernels, (0, 1].")
    slowdown: Pos = Field(description="Sustained GEMM time / burst GEMM time at that duty; a ratio (1 = no slowdown).")


class OverlapPoint(StrictModel):
    """How much a compute kernel and an NCCL collective on the same GPU slow each other while they
    overlap (``calibrate/device/overlap_probe.py``: a loop of the kernel alone, the collective alone,
    then both at once on two streams; mean over the ranks that measured it).

    NCCL kernels occupy SMs (one block per channel) and HBM bandwidth, so a GEMM loses waves and a
    memory-bound kernel bandwidth while a collective runs; the collective loses SM time to them too.
    """

    kernel: Literal["gemm", "memory"] = Field(description="Compute kernel class: gemm (compute-bound, tensor "
                                              "cores) or memory (a memory-bound elementwise kernel).")
    work: Pos = Field(description="Size of one kernel call: FLOPs (2 m n k) of a gemm, minimum HBM bytes of a "
                      "memory kernel.")
    collective: Op = Field(description="The collective running beside it.")
    collective_bytes: Pos = Field(description="nccl-tests size of the collective call, bytes.")
    compute_slowdown: Pos = Field(description="Kernel time overlapped / kernel time alone; a ratio (1 = no "
                                  "slowdown).")
    comm_slowdown: Pos = Field(description="Collective time overlapped / collective time alone; a ratio.")


class P2PWaitPoint(StrictModel):
    """How much a compute kernel slows while a posted NCCL point-to-point kernel waits for its peer on the same
    GPU (``calibrate/device/p2p_resident.py``: the kernel alone, then beside a posted receive or send whose
    match the peer holds back).

    The waiting kernel holds its channels' thread blocks on the SMs, so a compute-bound kernel loses waves;
    a memory-bound kernel does not notice. Pipeline ranks post such kernels (torch.distributed.pipelining:
    one NCCL stream per rank, receives posted before they are needed).
    """

    kernel: Literal["gemm", "memory"] = Field(description="Compute kernel class: gemm or memory (a device copy).")
    work: Pos = Field(description="Size of one kernel call: FLOPs (2 m n k) of a gemm, bytes read and written of a copy.")
    side: Literal["recv", "send"] = Field(description="The posted kernel that waits: a receive or a send.")
    compute_slowdown: Pos = Field(description="Kernel time beside the waiting kernel / kernel time alone; a ratio.")


class ComputeParams(StrictModel):
    """GPU compute model."""

    dtype: Literal["bf16", "fp16", "fp8", "fp32"] = Field(
        "bf16", description="Data type the tables were measured in: peak_tflops and clock_table apply to it only "
        "(other dtypes use the GPU spec's peak and no slowdown).")
    provenance: str | None = Field(None, description="Where the tables come from when they were not measured on this "
                                   "GPU (transferred from another GPU: source, method, date).")
    peak_tflops: Pos | None = Field(None, description="Override the GPU spec's dense peak of dtype, TFLOP/s.")
    gemm_efficiency: Pos = Field(0.75, le=1.0, description="Large-GEMM efficiency (fraction of peak, 0-1) when no table point applies.")
    gemm_half_flops: NonNeg = Field(2.0e9, description="GEMM FLOPs at which efficiency falls to half the large-GEMM value (small-GEMM roll-off).")
    gemm_table: list[GemmPoint] = Field(default_factory=list, description="Measured points; the model interpolates by log(FLOPs) and shape.")
    hbm_bandwidth_GBps: Pos | None = Field(None, description="Achievable HBM bandwidth (read + write counted), GB/s; default: 0.9 x spec.")
    kernel_launch_us: NonNeg = Field(4.0, description="GPU-side gap between dependent kernels, microseconds.")
    device_spread: NonNeg = Field(0.0, le=0.2, description=(
        "Relative standard deviation of one GPU's sustained speed on the same kernel across the GPUs of one job "
        "(same SKU and host type; manufacturing and power-management variation), measured by running one kernel on "
        "every GPU at once (calibrate/device/diag8.sh pi, calibrate/device/pi/strong_scaling.py). A generic job's "
        "compute phase split over n GPUs (divide_among_ranks) waits for the slowest: its time is x (1 + "
        "device_spread x E[max of n standard normals]) (0.56 at 2 GPUs, 1.03 at 4, 1.42 at 8). 0: not measured. "
        "Not applied to training steps nor to per-rank job phases (at the measured 0.04-0.11% a step moves by "
        "less than 0.2%)."))
    attention_efficiency: Pos = Field(0.55, le=1.0, description="Flash-attention efficiency relative to dense peak (fraction, 0-1) "
                                      "(used when attention_table is empty).")
    attention_table: list[AttentionPoint] = Field(
        default_factory=list, description="Measured flash-attention points (bench --kernels); the model "
        "interpolates by log(FLOPs) among the points of the same pass, head_dim and seq.")
    wave_loss: dict[Literal["NT", "NN", "TN"], Annotated[float, Field(ge=0.0, le=1.0)]] = Field(
        default_factory=dict, description="Per GEMM layout, the share of a partial last wave's idle SMs (the "
        "one-tile wave model's loss) the GEMM library still shows (calibrate/device/wave_sweep.py; "
        "clustersim/roofline.py library_fill); a layout not listed, the batched and the square-sweep GEMMs take "
        "the mean of those listed. Empty: the one-tile model (1). Used where tables are read through the roofline.")
    bmm_table: list[BmmPoint] = Field(
        default_factory=list, description="Measured batched GEMMs of an eager attention core (its q k^T and p v); "
        "the model reads each point's share of its roofline (clustersim/roofline.py) at the nearest seq and "
        "head_dim, interpolated in log(batch x heads), times the roofline of the run's own shape. Empty: the "
        "batched GEMMs are priced as one GEMM with the batch folded into K.")
    gemm_layout_table: list[GemmLayoutPoint] = Field(
        default_factory=list, description="Measured GEMMs of linear layers in the three training layouts "
        "(bench --kernels); when it has a layout, that layout's linears use it instead of gemm_table.")
    memory_table: list[MemoryPoint] = Field(
        default_factory=list, description="Measured memory-bound kernel classes (bench --kernels): efficiency "
        "relative to hbm_bandwidth_GBps, interpolated by log(bytes); classes not listed use bytes / HBM bandwidth.")
    clock_table: list[ClockPoint] = Field(
        default_factory=list, description="Sustained slowdown of compute-bound kernels (GEMM, attention) against "
        "the burst timings of the tables above, by the step's compute duty (bench --kernels gemm_duty rows); "
        "empty: no slowdown.")
    clock_window_ms: Pos | None = Field(
        None, description="Time over which the power limiter averages a GPU's load (calibrate/device/clock_idle.py: "
        "GEMMs cycled with idle time run at the clock of their average duty up to this period): a kernel's clock "
        "follows its rank's compute duty over this window around it, so idle time (a pipeline rank waiting for its "
        "peer) lets the kernels near it run faster. null: every kernel at the step's duty.")
    roofline_lookup: bool = Field(
        False, description="Read gemm_layout_table and attention_table through the roofline at the run's own shape "
        "(wave quantisation over the GPU spec's sm_count, HBM bound): set on tables transferred from another GPU "
        "(clustersim/calibration/transfer.py; clustersim/workload/compute.py says how).")
    overlap_table: list[OverlapPoint] = Field(
        default_factory=list, description="Mutual slowdown of compute kernels and NCCL collectives that overlap "
        "on one GPU (overlap probe rows); the simulator stretches compute and collectives by it wherever they run "
        "at once. Empty: no slowdown.")
    p2p_wait_table: list[P2PWaitPoint] = Field(
        default_factory=list, description="Slowdown of compute kernels beside a posted point-to-point kernel that "
        "waits for its peer (p2p residency probe rows); the simulator stretches a pipeline rank's compute for as "
        "long as one of its p2p batches is posted. Empty: no slowdown.")


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
        None, description="Fitted link model (calibrate/make_profiles.py): used for collectives without a matching "
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
