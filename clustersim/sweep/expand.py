"""Expand a study's axes into points: the ``--set`` items of each point, in a stable order.

Pure functions over the validated :class:`~clustersim.sweep.study.Study`; no file is read here.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from clustersim.budget import check_bound
from clustersim.errors import ClusterSimError
from clustersim.sweep.study import Axis, Study


@dataclass(frozen=True)
class PointInput:
    """One point of a study before its files are read.

    ``values`` maps each varied path to this point's value (paths an axis leaves unset at this
    point are absent); ``overrides`` are the ``--set`` items that make the point, in order:
    the study's ``set``, the axes, then the command line's ``--set``.
    """

    index: int
    values: dict[str, Any]
    overrides: list[str] = field(default_factory=list)


def render_value(value: Any) -> str:
    """A value as ``--set`` text that reads back as the same value.

    >>> [render_value(v) for v in (8, 1e-05, "400", True, None, [1, 2])]
    ['8', '1.0e-05', "'400'", 'true', 'null', '[1, 2]']
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise ClusterSimError(f"{value!r} is not a finite number")
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, allow_unicode=True).strip()
    text = text.removesuffix("...").strip()
    if "\n" in text or yaml.safe_load(text) != value:
        raise ClusterSimError(f"value {value!r} cannot be written as a one-line --set value")
    return text


def axis_size(axis: Axis) -> int:
    """Points of one axis, counted without listing them.

    >>> from clustersim.sweep.study import Axis
    >>> axis_size(Axis(grid={"a": [1, 2, 3], "b": ["x", "y"]}))
    6
    """
    if axis.grid is not None:
        return math.prod(len(v) for v in axis.grid.values())
    if axis.zip is not None:
        return min(len(v) for v in axis.zip.values())
    return len(axis.points)


def axis_points(axis: Axis) -> list[dict[str, Any]]:
    """The points of one axis, each a mapping of path to value.

    >>> from clustersim.sweep.study import Axis
    >>> axis_points(Axis(grid={"a": [1, 2], "b": ["x", "y"]}))
    [{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}]
    >>> axis_points(Axis(zip={"a": [1, 2], "b": ["x", "y"]}))
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}]
    """
    if axis.grid is not None:
        paths = list(axis.grid)
        return [dict(zip(paths, combo)) for combo in itertools.product(*(axis.grid[p] for p in paths))]
    if axis.zip is not None:
        paths = list(axis.zip)
        return [dict(zip(paths, combo)) for combo in zip(*(axis.zip[p] for p in paths))]
    return [dict(item) for item in axis.points]


def expand(study: Study, extra: list[str] | None = None) -> list[PointInput]:
    """Every point of ``study``: the product of its axes (first axis outermost), numbered from 0.

    ``extra`` are ``--set`` items from the command line, applied last to every point.

    >>> from clustersim.sweep.study import Study
    >>> s = Study(name="s", scenario="x", set={"simulation.fidelity": "analytical"},
    ...           axes=[{"grid": {"cluster.gpus": [1, 2]}}])
    >>> [p.overrides for p in expand(s)]
    [['simulation.fidelity=analytical', 'cluster.gpus=1'], ['simulation.fidelity=analytical', 'cluster.gpus=2']]
    """
    # counted before anything is listed: ten axes of ten values are 10^10 points
    check_bound("study points", math.prod(axis_size(a) for a in study.axes), field="axes")
    base = [f"{path}={render_value(v)}" for path, v in study.set.items()]
    per_axis = [axis_points(a) for a in study.axes]
    out: list[PointInput] = []
    for i, combo in enumerate(itertools.product(*per_axis)):
        values: dict[str, Any] = {}
        for part in combo:
            values.update(part)
        sets = base + [f"{path}={render_value(v)}" for path, v in values.items()] + list(extra or [])
        out.append(PointInput(index=i, values=values, overrides=sets))
    return out
