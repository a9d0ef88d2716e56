"""The host part of a calibration profile: what the CPU that issues a rank's kernels costs.

:class:`HostParams` (the profile's ``host:``): the framework's per-call overhead, FSDP2's hook
and optimizer host time, the first collective of a fresh communicator, the host's speed band
(:class:`HostSpeedBand`) and the communicator start-up (:class:`CommInit`). Part of
:class:`clustersim.config.profile.Profile`, which re-exports every name here.
"""

from __future__ import annotations

import math

from pydantic import Field, PositiveInt, field_validator

from clustersim.config.base import NonNeg, StrictModel


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
