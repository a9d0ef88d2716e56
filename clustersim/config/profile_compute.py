"""The compute part of a calibration profile: the GPU's kernel tables (the profile's ``compute:``).

:class:`ComputeParams`: GEMM efficiency (a large-GEMM value and measured points,
:class:`GemmPoint`, per training layout :class:`GemmLayoutPoint`), flash attention
(:class:`AttentionPoint`), an eager attention core's batched GEMMs (:class:`BmmPoint`),
memory-bound kernel classes (:class:`MemoryPoint`), the sustained clock (:class:`ClockPoint`),
compute and collectives slowing each other (:class:`OverlapPoint`) and compute beside a waiting
point-to-point kernel (:class:`P2PWaitPoint`); a transferred section's source and held-out error
(:class:`TransferInfo`). Part of :class:`clustersim.config.profile.Profile`,
which re-exports every name here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from clustersim.config.base import NonNeg, Pos, StrictModel
from clustersim.config.profile_links import Op


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
    (``validation/probes/attention-bmm-by-shape/attention_bmm.py``): ``batch_heads`` slices of sequence ``seq`` and head size
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


class Fp8GemmPoint(GemmLayoutPoint):
    """Measured FP8 GEMM (``torch._scaled_mm``, e4m3 operands, bf16 output) of one linear layer in a training
    layout and scaling recipe (``calibrate bench --kernels --kernel-classes fp8``)."""

    recipe: Literal["tensorwise", "rowwise"] = Field(description="Operand scaling: one scale per tensor or per row.")
    efficiency: Pos = Field(le=1.0, description="Achieved / the GPU's dense FP8 peak (FLOPs = 2 tokens out_features "
                            "in_features); fraction, <= 1.")


class GroupedGemmPoint(StrictModel):
    """Measured grouped GEMM (``torch._grouped_mm``) of one projection of ``experts`` experts, ``tokens`` each
    (``calibrate bench --kernels --kernel-classes experts``)."""

    layout: Literal["NT", "NN", "TN"] = Field(description="NT forward, NN dgrad, TN wgrad (the groups along K).")
    experts: int = Field(gt=0, description="Experts (groups) in the call.")
    tokens: int = Field(gt=0, description="Tokens of each expert, rows.")
    out_features: int = Field(gt=0, description="Output features of one expert's weight, elements.")
    in_features: int = Field(gt=0, description="Input features of one expert's weight, elements.")
    efficiency: Pos = Field(le=1.0, description="Achieved / dense peak of the dtype (FLOPs = 2 experts tokens "
                            "out_features in_features); fraction, <= 1.")


class MoeLoopPoint(StrictModel):
    """Wall time per expert of a Hugging Face style expert loop as training runs it (autograd on; bench
    ``moe_loop_fwd`` / ``moe_loop_fwd_bwd`` rows: 16 experts with their own weights, tokens to 2 experts each)."""

    hidden: int = Field(gt=0, description="Model width h, elements.")
    ffn: int = Field(gt=0, description="Inner width of one expert (SwiGLU: gate and up 2 ffn x h, down h x ffn).")
    tokens: int = Field(gt=0, description="Tokens per expert.")
    forward_us: Pos = Field(description="Wall time of one expert's forward (the torch.where wait, its kernels), microseconds.")
    backward_us: Pos = Field(description="Wall time of its backward (forward + backward minus forward), microseconds.")


class MemoryPoint(StrictModel):
    """Measured efficiency of one memory-bound kernel class at one size.

    ``efficiency`` = (minimum HBM bytes of the op / kernel time) / ``hbm_bandwidth_GBps`` (the copy
    bandwidth); ``bytes`` is that minimum traffic (each tensor read or written once; AdamW: read
    param, grad, exp_avg, exp_avg_sq and write param, exp_avg, exp_avg_sq).
    """

    op: Literal["layernorm_fwd", "layernorm_bwd", "gelu_fwd", "gelu_bwd", "add", "cross_entropy", "adamw",
                "rmsnorm_fwd", "rmsnorm_bwd", "rope", "swiglu", "repeat_kv", "eager_attention_fwd",
                "eager_attention_bwd", "fp8_quantize", "fp8_quantize_rowwise", "fp8_transpose", "bf16_transpose",
                "fp8_quantize_fused", "fp8_quantize_rowwise_fused", "fp8_transpose_fused", "bf16_transpose_fused",
                "moe_router", "moe_permute", "moe_unpermute"] = Field(
        description="Memory-bound kernel class (bench --kernels names).")
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
    overlap (``validation/probes/compute-beside-collectives/overlap_probe.py``: a loop of the kernel alone, the collective alone,
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
    GPU (``validation/probes/p2p-waiting-kernel/p2p_resident.py``: the kernel alone, then beside a posted receive or send whose
    match the peer holds back).

    The waiting kernel holds its channels' thread blocks on the SMs, so a compute-bound kernel loses waves;
    a memory-bound kernel does not notice. Pipeline ranks post such kernels (torch.distributed.pipelining:
    one NCCL stream per rank, receives posted before they are needed).
    """

    kernel: Literal["gemm", "memory"] = Field(description="Compute kernel class: gemm or memory (a device copy).")
    work: Pos = Field(description="Size of one kernel call: FLOPs (2 m n k) of a gemm, bytes read and written of a copy.")
    side: Literal["recv", "send"] = Field(description="The posted kernel that waits: a receive or a send.")
    compute_slowdown: Pos = Field(description="Kernel time beside the waiting kernel / kernel time alone; a ratio.")


class TransferInfo(StrictModel):
    """Where a transferred ``compute`` section came from and how far its rule is off when tested
    (``compute.transfer``; written by ``profiles/make_profiles.py``).

    The rule is stated in ``clustersim/calibration/transfer.py``; ``logo_error`` is its leave-one-GPU-out error
    (``tools/transfer_logo.py``): the source GPU's tables carried to another GPU that has its own measurements and
    compared point by point there, per kernel class. It is the width a transferred figure's band carries.
    """

    from_profile: str = Field(description="The measured profile whose tables were transferred (e.g. hgx-h200).")
    rule: str = Field(description="The transfer rule, in a few words, and the module that states it.")
    logo_error: dict[str, Annotated[float, Field(ge=0.0)]] = Field(
        default_factory=dict, description="Per kernel class (gemm_layout, gemm_square, attention, bmm, memory, "
        "eager_attention, clock, hbm_copy), the mean |time error| of the rule held out: this source's tables carried "
        "to the other measured GPU and priced at its measured points; a fraction (0.05 = 5%).")
    logo_test: str = Field(description="Which pair and direction the held-out error is from, and where the table is "
                           "(a validation study).")


class ComputeParams(StrictModel):
    """GPU compute model."""

    dtype: Literal["bf16", "fp16", "fp8", "fp32"] = Field(
        "bf16", description="Data type the tables were measured in: peak_tflops and clock_table apply to it only "
        "(other dtypes use the GPU spec's peak and no slowdown).")
    provenance: str | None = Field(None, description="Where the tables come from when they were not measured on this "
                                   "GPU (transferred from another GPU: source, method, date).")
    transfer: TransferInfo | None = Field(None, description="Set on a section transferred from another GPU: its "
                                          "source, rule and the rule's leave-one-GPU-out error per kernel class.")
    peak_tflops: Pos | None = Field(None, description="Override the GPU spec's dense peak of dtype, TFLOP/s.")
    gemm_efficiency: Pos = Field(0.75, le=1.0, description="Large-GEMM efficiency (fraction of peak, 0-1) when no table point applies.")
    gemm_half_flops: NonNeg = Field(2.0e9, description="GEMM FLOPs at which efficiency falls to half the large-GEMM value (small-GEMM roll-off).")
    gemm_table: list[GemmPoint] = Field(default_factory=list, description="Measured points; the model interpolates by log(FLOPs) and shape.")
    hbm_bandwidth_GBps: Pos | None = Field(None, description="Achievable HBM bandwidth (read + write counted), GB/s; default: 0.9 x spec.")
    kernel_launch_us: NonNeg = Field(4.0, description="GPU-side gap between dependent kernels, microseconds.")
    device_spread: NonNeg = Field(0.0, le=0.2, description=(
        "Relative standard deviation of one GPU's sustained speed on the same kernel across the GPUs of one job "
        "(same SKU and host type; manufacturing and power-management variation), measured by running one kernel on "
        "every GPU at once (validation/probes/fsdp2-step-traces/diag8.sh pi, validation/probes/pi-timed-section/strong_scaling.py). A generic job's "
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
        "one-tile wave model's loss) the GEMM library still shows (validation/probes/gemm-partial-wave/wave_sweep.py; "
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
    expert_gemm_table: list[GemmLayoutPoint] = Field(
        default_factory=list, description="Measured GEMMs of MoE expert shapes (16-4,096 tokens; bench --kernels "
        "--kernel-classes experts), read by the experts only (a loop's GEMMs, and grouped experts without "
        "grouped_gemm_table). Empty: experts read gemm_layout_table.")
    fp8_layout_table: list[Fp8GemmPoint] = Field(
        default_factory=list, description="Measured FP8 GEMMs of linear layers by layout and recipe (bench --kernels "
        "--kernel-classes fp8): with training.precision.params fp8 the blocks' linears use them (against the FP8 "
        "peak). Empty: FP8 linears at the bf16 table's efficiency times the FP8 peak (an assumption, no measurement).")
    grouped_gemm_table: list[GroupedGemmPoint] = Field(
        default_factory=list, description="Measured grouped GEMMs of MoE experts (bench --kernels --kernel-classes "
        "experts): grouped experts read the nearest weight shape, interpolated in log(tokens per expert). Empty: "
        "each expert at its own token count from gemm_layout_table, one launch for the group.")
    moe_loop_expert_us: NonNeg | None = Field(
        None, description="Wall time one expert of a Hugging Face style expert loop costs beyond its kernels' work "
        "(torch.where waits for the GPU, then the host issues the expert's ~10 kernels), measured at one token per "
        "expert (bench moe_loop_host rows), microseconds. None: not measured (a loop costs its kernels' issue only).")
    moe_loop_table: list[MoeLoopPoint] = Field(
        default_factory=list, description="Measured wall time per expert of an expert loop in training (bench "
        "--kernels --kernel-classes experts): the loop's experts read the nearest (hidden, ffn), interpolated in "
        "log(tokens per expert). Empty: moe_loop_expert_us and the experts' kernels.")
    memory_table: list[MemoryPoint] = Field(
        default_factory=list, description="Measured memory-bound kernel classes (bench --kernels): efficiency "
        "relative to hbm_bandwidth_GBps, interpolated by log(bytes); classes not listed use bytes / HBM bandwidth.")
    clock_table: list[ClockPoint] = Field(
        default_factory=list, description="Sustained slowdown of compute-bound kernels (GEMM, attention) against "
        "the burst timings of the tables above, by the step's compute duty (bench --kernels gemm_duty rows); "
        "empty: no slowdown.")
    clock_window_ms: Pos | None = Field(
        None, description="Time over which the power limiter averages a GPU's load (validation/probes/clock-idle-window/clock_idle.py: "
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

    def tables_summary(self) -> str:
        """Which measured compute tables this section carries, in one line (``clustersim run`` prints it, so a
        profile without them, whose compute is the bare roofline defaults, does not go unnoticed).

        >>> ComputeParams().tables_summary()
        'no measured tables (defaults: GEMM 0.75 of peak, attention 0.55, 4 us kernel gap)'
        >>> ComputeParams(gemm_table=[{"m": 8, "n": 8, "k": 8, "efficiency": 0.5}]).tables_summary()
        'gemm 1, kernel gap 4 us'
        """
        names = ("gemm", "gemm_layout", "attention", "bmm", "memory", "clock", "overlap", "p2p_wait")
        have = [f"{n} {len(getattr(self, n + '_table'))}" for n in names if getattr(self, n + "_table")]
        if not have:
            return (f"no measured tables (defaults: GEMM {self.gemm_efficiency:g} of peak, attention "
                    f"{self.attention_efficiency:g}, {self.kernel_launch_us:.3g} us kernel gap)")
        via = ", through the roofline" if self.roofline_lookup else ""
        return ", ".join(have) + f", kernel gap {self.kernel_launch_us:.3g} us{via}"
