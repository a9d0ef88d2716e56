"""Roofline of a tiled kernel on one GPU: wave quantisation over the SMs, then the HBM bound.

A compute-bound kernel (a GEMM, a flash-attention pass) runs as equal thread blocks ("tiles"), one
per SM at a time. ``tiles`` blocks on ``sms`` SMs take ``ceil(tiles / sms)`` waves; the last partial
wave leaves SMs idle, so the best share of the peak the kernel can reach is
``w = tiles / (ceil(tiles / sms) * sms)``. It also cannot beat its bytes at the HBM bandwidth. Its
*roofline efficiency* (fraction of the dense peak) is therefore ``min(w, F bw / (B peak))`` for ``F``
FLOPs moving ``B`` bytes. A GEMM library does better than one fixed tile: where a profile carries the
library's measured share of the partial-wave loss (``wave_loss``, :func:`library_fill`) a GEMM's ``w`` uses it.

Used by the compute transfer (:mod:`clustersim.calibration.transfer`: a measured point's time split
into this roofline and the residual it does not explain) and by the compute model
(:mod:`clustersim.workload.compute`: a transferred table's residual times the roofline at the run's
own shape). Also the reading of an event-timed GEMM sweep that both need (:func:`issue_corrected_table`: each
point's host issue latency found and taken out). Numbers only: imports nothing from the package.

Tiles: 128 x 128 output tiles for bf16 tensor-core GEMMs (the CUTLASS / cuBLAS thread-block tile of
both Ampere and Hopper large GEMMs), 128 query rows per (batch, head) for flash attention (the
FlashAttention-2 forward and backward block). Elements of the measured tables are bf16 (2 bytes).
"""

from __future__ import annotations

import math
from typing import Mapping

#: output tile of a bf16 tensor-core GEMM thread block (rows x columns)
GEMM_TILE = (128, 128)
#: query rows per flash-attention thread block (FlashAttention-2, forward and backward)
ATTENTION_BLOCK = 128
#: bytes per element of the measured (bf16) tables
ELEMENT_BYTES = 2
#: FLOPs of a flash-attention backward per forward FLOP (the tables' and the workload's count)
ATTENTION_BWD_FLOPS = 2.5


def wave_efficiency(tiles: int, sm_count: int) -> float:
    """Share of SM time busy when ``tiles`` equal thread blocks run in waves over ``sm_count`` SMs.

    >>> wave_efficiency(132, 132), round(wave_efficiency(133, 132), 3)
    (1.0, 0.504)
    """
    waves = math.ceil(tiles / sm_count)
    return tiles / (waves * sm_count)


def library_fill(tiles: int, sm_count: int, wave_loss: float) -> float:
    """Share of the SMs a GEMM library keeps busy for ``tiles`` 128 x 128 output tiles on ``sm_count`` SMs.

    The one-tile model runs ``ceil(x)`` waves for ``x = tiles / SMs`` (:func:`wave_efficiency`). A library
    picks other tiles, split-K or stream-K where a partial last wave would idle SMs, and keeps only ``wave_loss``
    of that wave's idle share: the kernel takes ``x + wave_loss (ceil(x) - x)`` waves' time, so the share is
    ``x / (x + wave_loss (ceil(x) - x))``. ``wave_loss`` 1 is the one-tile model, 0 no loss at all; it is
    measured per GEMM layout (``validation/probes/gemm-partial-wave/wave_sweep.py``; a profile's ``wave_loss``).

    >>> library_fill(144, 132, 1.0) == wave_efficiency(144, 132), library_fill(144, 132, 0.0)
    (True, 1.0)
    >>> round(library_fill(288, 108, 0.06), 3), round(library_fill(288, 108, 0.33), 3)   # N18B's 2,048 tokens
    (0.993, 0.96)
    """
    x = tiles / sm_count
    return x / (x + wave_loss * (math.ceil(x) - x))


def layout_wave_loss(table: Mapping[str, float], layout: str | None) -> float | None:
    """A profile's ``wave_loss`` for a GEMM ``layout`` (NT, NN, TN; None: a batched or square-sweep GEMM): its
    value, else the mean of the layouts it lists; None for an empty table (the one-tile wave model).

    >>> layout_wave_loss({"NT": 0.06, "TN": 0.32}, "TN"), layout_wave_loss({"NT": 0.06, "TN": 0.32}, "NN")
    (0.32, 0.19)
    >>> layout_wave_loss({}, "NT") is None
    True
    """
    if not table:
        return None
    return table.get(layout or "", sum(table.values()) / len(table))


def roofline_efficiency(flops: float, nbytes: float, tiles: int, *, peak: float, bw: float, sms: int,
                        wave_loss: float | None = None) -> float:
    """Fraction of ``peak`` (FLOP/s) the roofline allows: ``min(wave share, F bw / (B peak))``.

    ``bw``: achievable HBM bytes/s; ``sms``: SM count; ``wave_loss``: a GEMM library's measured share of a
    partial wave's loss (:func:`library_fill`) in place of the one-tile wave model, where the profile has one.

    >>> roofline_efficiency(1e12, 1e8, 264, peak=1e15, bw=3e12, sms=132)   # two full waves
    1.0
    >>> roofline_efficiency(1e12, 1e8, 108, peak=1e15, bw=3e12, sms=132)   # one wave, 108 of 132 SMs
    0.8181818181818182
    >>> round(roofline_efficiency(1e9, 1e8, 264, peak=1e15, bw=3e12, sms=132), 6)   # memory bound: 1 GFLOP / 100 MB
    0.03
    """
    w = wave_efficiency(tiles, sms) if wave_loss is None else library_fill(tiles, sms, wave_loss)
    return min(w, flops * bw / (nbytes * peak)) if nbytes > 0 else w


def gemm_shape(m: int, n: int, k: int) -> tuple[float, float, int]:
    """(FLOPs, bytes, tiles) of an ``m x n x k`` GEMM: ``A`` and ``B`` read, ``C`` written once, bf16.

    >>> gemm_shape(256, 256, 128)
    (16777216.0, 262144, 4)
    """
    return (2.0 * m * n * k, ELEMENT_BYTES * (m * k + n * k + m * n),
            math.ceil(m / GEMM_TILE[0]) * math.ceil(n / GEMM_TILE[1]))


def layout_gemm(layout: str, tokens: int, out_features: int, in_features: int) -> tuple[int, int, int]:
    """GEMM ``(m, n, k)`` (output ``m x n``) of a linear layer's training GEMM by layout: forward NT
    ``(tokens, out, in)``, dgrad NN ``(tokens, in, out)``, wgrad TN ``(out, in, tokens)``.

    >>> layout_gemm("TN", 8192, 3072, 1024)
    (3072, 1024, 8192)
    """
    return {"NT": (tokens, out_features, in_features), "NN": (tokens, in_features, out_features),
            "TN": (out_features, in_features, tokens)}[layout]


def attention_shape(direction: str, batch_heads: int, seq: int, head_dim: int) -> tuple[float, float, int]:
    """(FLOPs, bytes, tiles) of a causal flash-attention pass over ``batch_heads`` (batch x heads) sequences.

    FLOPs as the tables count them (``2 b h s^2 d``, backward x :data:`ATTENTION_BWD_FLOPS`); bytes:
    q, k, v, o read / written once (backward also dq, dk, dv, do); tiles: :data:`ATTENTION_BLOCK` query
    rows per sequence.

    >>> attention_shape("fwd", 16, 2048, 128)
    (17179869184.0, 33554432, 256)
    """
    mult = ATTENTION_BWD_FLOPS if direction == "bwd" else 1.0
    return (2.0 * batch_heads * seq * seq * head_dim * mult,
            ELEMENT_BYTES * batch_heads * seq * head_dim * (4 if direction == "fwd" else 8),
            batch_heads * math.ceil(seq / ATTENTION_BLOCK))


#: batched GEMMs of an eager (non-flash) attention core, as ``(m, n, k)`` of one (batch, head) slice for
#: sequence ``s`` and head size ``d``: the scores ``q k^T`` (and backward ``dO v^T``), the context ``p v``
#: (and backward ``dS k``), and the transposed-A context of backward ``p^T dO`` / ``dS^T q``
BMM_KINDS = ("score", "context", "context_t")


def bmm_shape(kind: str, batch_heads: int, seq: int, head_dim: int) -> tuple[float, float, int]:
    """(FLOPs, bytes, tiles) of one batched GEMM of an eager attention core over ``batch_heads`` slices.

    ``score``: ``(s x d) @ (d x s)`` per slice, an ``s x s`` output; ``context`` / ``context_t``:
    ``(s x s) @ (s x d)``. Every slice reads its operands and writes its output once (bf16); tiles are
    :data:`GEMM_TILE` outputs of every slice.

    >>> bmm_shape("score", 8, 2048, 128)
    (8589934592.0, 75497472, 2048)
    >>> bmm_shape("context", 8, 2048, 128)
    (8589934592.0, 75497472, 128)
    """
    m, n, k = (seq, seq, head_dim) if kind == "score" else (seq, head_dim, seq)
    flops, nbytes, tiles = gemm_shape(m, n, k)
    return batch_heads * flops, batch_heads * nbytes, batch_heads * tiles


def issue_corrected_table(pts: list[tuple[int, int, int, float]], peak: float, large_eff: float,
                          ratio: float = 5.0) -> tuple[list[tuple[int, int, int, float]], float]:
    """Remove the host issue latency from an event-timed GEMM table.

    ``calibrate bench`` times every GEMM alone between two CUDA events on an idle GPU
    (``clustersim/calibration/bench/compute.py`` ``event_times``): the start event runs at once, the GEMM
    kernel only after the host has dispatched ``torch.matmul`` and launched it. Each point's time
    is therefore ``issue + kernel``. The smallest GEMM of the table measures ``issue`` when its
    time is more than ``ratio`` x its FLOP time at the large-GEMM efficiency (a 256^3 GEMM is
    34 MFLOP, well under a microsecond of tensor-core work). That floor is subtracted from every
    point; points whose time is under twice the floor are dropped (the remainder is too small to
    be a kernel measurement). Returns the corrected points and the floor (seconds; 0 when the
    smallest point is not launch-bound, and the table unchanged).

    >>> pk = 1e15
    >>> t = lambda m, n, k, e: (m, n, k, 2 * m * n * k / (pk * e))
    >>> raw = [(256, 256, 256, 2 * 256**3 / (pk * 18e-6)), (4096, 4096, 4096, 2 * 4096**3 / (pk * (18e-6 + 2 * 4096**3 / (pk * 0.8))))]
    >>> pts, floor = issue_corrected_table(raw, pk, 0.75)
    >>> round(floor * 1e6, 1), [(p[0], round(p[3], 3)) for p in pts]
    (18.0, [(4096, 0.8)])
    """
    if len(pts) < 2:
        return list(pts), 0.0
    times = [(2.0 * m * n * k / (peak * e), (m, n, k, e)) for m, n, k, e in pts]
    small = min(times, key=lambda x: 2.0 * x[1][0] * x[1][1] * x[1][2])
    f_small = 2.0 * small[1][0] * small[1][1] * small[1][2]
    kernel_small = f_small / (peak * large_eff)
    if small[0] < ratio * kernel_small:
        return list(pts), 0.0
    floor = small[0] - kernel_small
    out = []
    for t, (m, n, k, e) in times:
        if t < 2.0 * floor:
            continue
        out.append((m, n, k, 2.0 * m * n * k / (peak * (t - floor))))
    return (out or list(pts)), floor
