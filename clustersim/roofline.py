"""Roofline of a tiled kernel on one GPU: wave quantisation over the SMs, then the HBM bound.

A compute-bound kernel (a GEMM, a flash-attention pass) runs as equal thread blocks ("tiles"), one
per SM at a time. ``tiles`` blocks on ``sms`` SMs take ``ceil(tiles / sms)`` waves; the last partial
wave leaves SMs idle, so the best share of the peak the kernel can reach is
``w = tiles / (ceil(tiles / sms) * sms)``. It also cannot beat its bytes at the HBM bandwidth. Its
*roofline efficiency* (fraction of the dense peak) is therefore ``min(w, F bw / (B peak))`` for ``F``
FLOPs moving ``B`` bytes.

Used by the compute transfer (:mod:`clustersim.calibration.transfer`: a measured point's time split
into this roofline and the residual it does not explain) and by the compute model
(:mod:`clustersim.workload.compute`: a transferred table's residual times the roofline at the run's
own shape). Numbers only: imports nothing from the package.

Tiles: 128 x 128 output tiles for bf16 tensor-core GEMMs (the CUTLASS / cuBLAS thread-block tile of
both Ampere and Hopper large GEMMs), 128 query rows per (batch, head) for flash attention (the
FlashAttention-2 forward and backward block). Elements of the measured tables are bf16 (2 bytes).
"""

from __future__ import annotations

import math

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


def roofline_efficiency(flops: float, nbytes: float, tiles: int, *, peak: float, bw: float, sms: int) -> float:
    """Fraction of ``peak`` (FLOP/s) the roofline allows: ``min(wave share, F bw / (B peak))``.

    ``bw``: achievable HBM bytes/s; ``sms``: SM count.

    >>> roofline_efficiency(1e12, 1e8, 264, peak=1e15, bw=3e12, sms=132)   # two full waves
    1.0
    >>> roofline_efficiency(1e12, 1e8, 108, peak=1e15, bw=3e12, sms=132)   # one wave, 108 of 132 SMs
    0.8181818181818182
    >>> round(roofline_efficiency(1e9, 1e8, 264, peak=1e15, bw=3e12, sms=132), 6)   # memory bound: 1 GFLOP / 100 MB
    0.03
    """
    return min(wave_efficiency(tiles, sms), flops * bw / (nbytes * peak)) if nbytes > 0 else \
        wave_efficiency(tiles, sms)


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
