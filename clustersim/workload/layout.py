"""Rank layout of a parallel job: which global rank holds each (tp, cp, ep, dp, pp) coordinate,
and how the layers split over the virtual pipeline stages.

``parallelism.order`` lists the axes innermost first: ``tp-cp-ep-dp-pp`` puts the TP ranks of a
group on adjacent GPUs (inside a node) and the pipeline stages outermost (Megatron-LM's order).
"""

from __future__ import annotations

AXES = ("tp", "cp", "ep", "dp", "pp")


def split_layers(layers: int, chunks: int) -> list[int]:
    """Layers of each virtual stage: as even as possible, the deficit taken from the ends.

    When ``chunks`` does not divide ``layers``, every stage gets ``ceil(layers/chunks)`` and the
    first and last stages (then the second and second-to-last, ...) give one back, as Llama 3
    does for its embedding and LM-head stages (126 layers on 16 stages: 7, 8 x 14, 7).

    >>> split_layers(126, 16)
    [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7]
    """
    per_stage = -(-layers // chunks)
    out = [per_stage] * chunks
    deficit = per_stage * chunks - layers
    low, high, turn = 0, chunks - 1, 0
    while deficit > 0:  # alternate between the lowest and the highest stage not yet reduced
        idx = low if turn % 2 == 0 else high
        out[idx] -= 1
        deficit -= 1
        if turn % 2 == 0:
            low += 1
        else:
            high -= 1
        turn += 1
    return out


class Layout:
    """Global rank of every (tp, cp, ep, dp, pp) coordinate, from ``parallelism.order``.

    Examples
    --------
    >>> lay = Layout({"tp": 2, "cp": 1, "ep": 1, "dp": 2, "pp": 2}, "tp-cp-ep-dp-pp")
    >>> lay.rank(tp=1, dp=1, pp=1)
    7
    >>> lay.group("tp", dp=1, pp=1)
    [6, 7]
    """

    def __init__(self, sizes: dict[str, int], order: str):
        self.sizes = dict(sizes)
        self.order = order.split("-")
        self.stride: dict[str, int] = {}
        stride = 1
        for axis in self.order:
            self.stride[axis] = stride
            stride *= self.sizes[axis]
        self.world = stride
        self._groups: dict[tuple, tuple] = {}

    @classmethod
    def from_parallelism(cls, parallelism) -> "Layout":
        """The layout of a scenario's ``parallelism`` section (degrees and ``order``)."""
        par = parallelism
        # ep re-splits the dp*tp ranks (Megatron-Core), it is no dense axis: see clustersim.workload.moe
        return cls({"tp": par.tp, "cp": par.cp, "ep": 1, "dp": par.dp, "pp": par.pp}, par.order)

    def rank(self, **coords: int) -> int:
        """Global rank of the coordinates (missing axes are 0)."""
        return sum(self.stride[axis] * coords.get(axis, 0) for axis in AXES)

    def coords(self, rank: int) -> dict[str, int]:
        """Coordinates of a global rank (inverse of :meth:`rank`)."""
        return {axis: (rank // self.stride[axis]) % self.sizes[axis] for axis in AXES}

    def group(self, axis: str, **coords: int) -> list[int]:
        """Ranks along ``axis`` with the other coordinates fixed (memoised: builders ask often)."""
        key = (axis, tuple(sorted(coords.items())))
        hit = self._groups.get(key)
        if hit is not None:
            return list(hit)
        out = []
        for i in range(self.sizes[axis]):
            member = dict(coords)
            member[axis] = i
            out.append(self.rank(**member))
        self._groups[key] = tuple(out)
        return out
