"""The study file: which scenario, which ``--set`` paths vary and how, what to plot.

A study names a scenario and a list of axes. Each axis gives values of ``--set`` paths (the
override machinery of ``clustersim run --set``, ``topology.*`` and ``profile.*`` prefixes
included): ``grid`` (every combination of its paths), ``zip`` (the i-th value of every path
together) or ``list`` (explicit points, each a mapping of paths to values). The study's points are
the combinations of its axes, the first axis outermost. ``clustersim schema study`` exports the
JSON Schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import Field, field_validator, model_validator

from clustersim.config.base import StrictModel, load_yaml, resolve_file, validate

Value = Any  # a YAML scalar, list or mapping: whatever the path's field accepts


def _check_path(path: str) -> str:
    if not path or "=" in path or any(not p for p in path.split(".")) or path != path.strip():
        raise ValueError(f"{path!r} is not a --set path (dotted keys such as parallelism.tp)")
    return path


def _check_values(path: str, values: list[Value]) -> None:
    _check_path(path)
    if not values:
        raise ValueError(f"{path}: needs at least one value")


class Axis(StrictModel):
    """One axis of a study: exactly one of ``grid``, ``zip`` or ``list``."""

    grid: dict[str, list[Value]] | None = Field(
        None, description="--set path -> values: every combination is a point (the last path varies fastest).")
    zip: dict[str, list[Value]] | None = Field(
        None, description="--set path -> values, all of one length: the i-th values together are a point "
        "(e.g. nodes and dp growing together).")
    points: list[dict[str, Value]] | None = Field(
        None, alias="list", description="Explicit points, each a mapping of --set paths to values "
        "(items may set different paths).")

    @field_validator("grid", "zip")
    @classmethod
    def _mapping(cls, v: dict[str, list[Value]] | None) -> dict[str, list[Value]] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("needs at least one path")
        for path, values in v.items():
            _check_values(path, values)
        return v

    @field_validator("points")
    @classmethod
    def _points(cls, v: list[dict[str, Value]] | None) -> list[dict[str, Value]] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("needs at least one point")
        for item in v:
            if not item:
                raise ValueError("a point needs at least one path")
            for path in item:
                _check_path(path)
        return v

    @model_validator(mode="after")
    def _one(self) -> "Axis":
        given = [k for k in ("grid", "zip", "points") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("an axis has exactly one of grid, zip or list")
        if self.zip is not None and len({len(v) for v in self.zip.values()}) != 1:
            raise ValueError("every path of a zip axis needs the same number of values, got "
                             + ", ".join(f"{p}: {len(v)}" for p, v in self.zip.items()))
        return self

    @property
    def kind(self) -> str:
        """``grid``, ``zip`` or ``list``."""
        return "grid" if self.grid is not None else "zip" if self.zip is not None else "list"


class ScalingPlot(StrictModel):
    """Speedup and parallel efficiency against a GPU count (or any numeric column).

    strong: fixed total work, S(n) = T(n0)/T(n), ideal n/n0, E(n) = S(n)·n0/n.
    weak: work grows with n, E(n) = T(n0)/T(n), S(n) = E(n)·n/n0. T is ``time``; n0 the smallest n.
    """

    kind: Literal["scaling"]
    mode: Literal["strong", "weak"] = Field("strong", description="strong: fixed total work; weak: work per GPU fixed.")
    x: str = Field("n_gpus", description="Column holding n (GPUs).")
    time: str = Field("step_time_s", description="Column holding the time T(n).")
    series: str | None = Field(None, description="Column whose values split the points into separate lines.")
    measured: dict[float, float] | None = Field(
        None, description="Measured times to draw beside the simulated ones: n -> seconds (say where they come from "
        "in the study's comments).")
    measured_label: str = Field("measured", description="Legend text of the measured points.")
    file: str | None = Field(None, description="PNG file name in the output folder (default scaling.png).")


class BreakdownPlot(StrictModel):
    """Where each point's step time goes, as stacked bars (compute, exposed communication, bubble, ...)."""

    kind: Literal["breakdown"]
    label: str | None = Field(None, description="Column naming each bar (default: the varied paths).")
    file: str | None = Field(None, description="PNG file name in the output folder (default breakdown.png).")


class SensitivityPlot(StrictModel):
    """One output against one varied input, e.g. step time against a link class's bandwidth."""

    kind: Literal["sensitivity"]
    x: str = Field(description="Input column on the x axis (a varied --set path such as topology.node.nic_speed_Gbps).")
    y: str = Field("step_time_s", description="Output column on the y axis.")
    series: str | None = Field(None, description="Column whose values split the points into separate lines.")
    log_x: bool = Field(False, description="Logarithmic x axis.")
    file: str | None = Field(None, description="PNG file name in the output folder (default sensitivity.png).")


Plot = Annotated[Union[ScalingPlot, BreakdownPlot, SensitivityPlot], Field(discriminator="kind")]


class Study(StrictModel):
    """A what-if study: one scenario, varied along axes."""

    name: str = Field(description="Short identifier of the study (names the default output folder).")
    description: str | None = None
    scenario: str = Field(description="Scenario file (resolved against the study's folder, then the cwd) or shipped name.")
    set: dict[str, Value] = Field(default_factory=dict, description="--set path -> value applied to every point before the axes.")
    axes: list[Axis] = Field(default_factory=list, description="Axes; the points are every combination of them, the first outermost.")
    plan: bool = Field(False, description="Plan each point: the fastest parallel mix that fits replaces the scenario's (clustersim.plan.plan_point).")
    plots: list[Plot] = Field(default_factory=list, description="PNG plots written next to the tables.")
    max_events: int | None = Field(None, ge=1, le=100_000_000, description="Simulated-event budget of each point "
                                   "(count; the command's --max-events default of 2,000,000 when null): a study "
                                   "whose points need more says so.")

    @field_validator("set")
    @classmethod
    def _set_paths(cls, v: dict[str, Value]) -> dict[str, Value]:
        for path in v:
            _check_path(path)
        return v

    @model_validator(mode="after")
    def _unique_paths(self) -> "Study":
        seen: dict[str, int] = {}
        for i, axis in enumerate(self.axes):
            for path in axis_paths(axis):
                if path in seen and seen[path] != i:
                    raise ValueError(f"axes.{i}: {path} is already varied by axes.{seen[path]}")
                seen[path] = i
        return self

    @model_validator(mode="after")
    def _lines_need_a_series(self) -> "Study":
        # more than one varied dimension (each grid path is one; a zip or a list of points is one): without
        # series: one line would join every point in file order and zig-zag between the other axis's values
        dims = sum(len(axis.grid) if axis.grid is not None else 1 for axis in self.axes)
        for i, plot in enumerate(self.plots):
            if getattr(plot, "series", "") is None and dims > 1:
                raise ValueError(f"plots.{i}: the points vary along {dims} dimensions ({', '.join(self.varied)}); "
                                 "give series: (the column that splits them into lines), else one line zig-zags "
                                 "through all of them")
        return self

    @property
    def varied(self) -> list[str]:
        """The paths the axes vary, in axis order (the study's input columns)."""
        out: list[str] = []
        for axis in self.axes:
            out += [p for p in axis_paths(axis) if p not in out]
        return out


def axis_paths(axis: Axis) -> list[str]:
    """The ``--set`` paths an axis varies, in file order."""
    if axis.grid is not None:
        return list(axis.grid)
    if axis.zip is not None:
        return list(axis.zip)
    out: list[str] = []
    for item in axis.points:
        out += [p for p in item if p not in out]
    return out


def load_study(source: str | Path) -> tuple[Study, Path]:
    """Read a study file by path or shipped name (``study-pi-scaling``); returns the study and its path."""
    path = resolve_file(source, "scenario")
    return validate(Study, load_yaml(path), file=str(path)), path
