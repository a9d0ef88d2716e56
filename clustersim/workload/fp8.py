"""The casts an FP8 linear layer runs around its three GEMMs (``training.precision.params: fp8``).

``torch._scaled_mm`` (and the cuBLASLt FP8 GEMM beneath Transformer Engine) takes e4m3 operands, the
first row-major and the second column-major, so a linear layer ``y = x W^T`` of ``tokens x in`` inputs
and an ``out x in`` weight casts, per micro-batch (the reference program's ``_Fp8Linear``,
reference/train_gpt_fp8_moe.py; torchao's ``Float8Linear`` does the same):

``tensorwise`` (one scale per tensor)
    forward: quantise x and W (absolute maximum, scale, scaled cast); backward: quantise dy, then
    FP8 transposes of W (dgrad ``dy @ W`` needs W column-major), of dy and of x (wgrad ``dy^T x``).
``rowwise`` (one scale per row of each operand)
    forward: quantise x and W by rows; backward: quantise dy by rows; bf16 transposes of W, dy and x,
    each then quantised by rows (a row scale of ``W^T`` is a column scale of W: no FP8 transpose
    keeps it).

Each cast is a measured memory-bound class of the profile (``fp8_quantize``, ``fp8_transpose``, ...;
``clustersim/calibration/bench/fp8.py``), as the unfused PyTorch sequence (``training.kernel_fusion:
none``) or compiled into generated kernels (``fused``, the ``_fused`` classes: what a framework's fused
cast does). A class the profile lacks moves its minimum bytes at the copy bandwidth.
"""

from __future__ import annotations

from clustersim.workload.segments import ComputeSegment

#: minimum HBM bytes per element of each cast class (the bench's count)
CAST_BYTES = {"fp8_quantize": 3, "fp8_quantize_rowwise": 3, "fp8_transpose": 2, "bf16_transpose": 4}
#: kernels of each class as the reference program runs it unfused, and compiled
CAST_KERNELS = {"fp8_quantize": (10, 2), "fp8_quantize_rowwise": (10, 2), "fp8_transpose": (1, 1),
                "bf16_transpose": (1, 1)}


def cast_plan(recipe: str, tokens: int, out_features: int, in_features: int) -> tuple[list, list]:
    """(forward, backward) casts of one FP8 linear layer: ``(class, elements)`` pairs (module doc).

    >>> fwd, bwd = cast_plan("tensorwise", 8, 4, 2)
    >>> fwd, bwd
    ([('fp8_quantize', 16), ('fp8_quantize', 8)], [('fp8_quantize', 32), ('fp8_transpose', 8), ('fp8_transpose', 32), ('fp8_transpose', 16)])
    """
    x, w, dy = tokens * in_features, out_features * in_features, tokens * out_features
    if recipe == "rowwise":
        q = "fp8_quantize_rowwise"
        return [(q, x), (q, w)], [(q, dy)] + [c for n in (w, dy, x) for c in (("bf16_transpose", n), (q, n))]
    return ([("fp8_quantize", x), ("fp8_quantize", w)],
            [("fp8_quantize", dy), ("fp8_transpose", w), ("fp8_transpose", dy), ("fp8_transpose", x)])


def cast_segments(cm, recipe: str, tokens: int, out_features: int, in_features: int,
                  fused: bool) -> tuple[list[ComputeSegment], list[ComputeSegment]]:
    """(forward, backward) segments of the casts of one FP8 linear layer on ``cm``
    (:class:`~clustersim.workload.compute.ComputeModel`), each a measured class at its own size."""
    def seg(name: str, elements: int) -> ComputeSegment:
        cls = f"{name}_fused" if fused else name
        kernels = CAST_KERNELS[name][1 if fused else 0]
        nbytes = CAST_BYTES[name] * elements
        return ComputeSegment(cm.memory_op(cls, nbytes, nbytes, kernels), kernels)

    fwd, bwd = cast_plan(recipe, tokens, out_features, in_features)
    return [seg(*c) for c in fwd], [seg(*c) for c in bwd]
