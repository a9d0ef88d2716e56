"""One point of a study: its inputs read from the files, its stable id, and its evaluation.

The controller reads each point's scenario, topology and profile once
(:func:`prepare_points`), so that a :class:`Task` carries everything a worker needs as plain data:
a worker on another machine needs no file. :func:`evaluate_point` runs in the worker and returns a
JSON-ready record: the point's id, its columns and the wall time it took.

A point's id is a hash of what decides its result (the validated scenario, topology and profile,
and whether it is planned), so identical points share one evaluation and an interrupted sweep
resumes by id.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from clustersim.breakdown import BREAKDOWN_KEYS
from clustersim.budget import limits
from clustersim.config.base import resolve_file
from clustersim.errors import ClusterSimError
from clustersim.simulate.resolve import ScenarioInputs, build_resolved, read_inputs
from clustersim.sweep.expand import expand
from clustersim.sweep.study import Study


# Columns every point has, after the varied paths; the first group is inputs, the second outputs.
INPUT_COLUMNS = ("scenario", "topology", "gpu", "profile", "fidelity", "n_gpus", "nodes", "planned", "model",
                 "params", "dp", "tp", "pp", "virtual_stages", "schedule", "zero", "sequence_parallel",
                 "micro_batch", "global_batch", "seq_len", "dtype")
OUTPUT_COLUMNS = ("step_time_s", "tokens_per_s", "samples_per_s", "mfu", "tflops_per_gpu",
                  *(f"breakdown_{k}_s" for k in BREAKDOWN_KEYS),
                  "peak_memory_bytes", "memory_total_needed_bytes", "memory_capacity_bytes", "fits",
                  "band_half_width", "band_lo_s", "band_hi_s", "evidence", "status", "error")


@dataclass
class Task:
    """What a worker evaluates: a point's id, its read inputs and whether to plan it."""

    id: str
    inputs: ScenarioInputs
    plan: bool = False
    #: the study's event budget of one point (``max_events``); None: the command's
    max_events: int | None = None


@dataclass
class PreparedPoint:
    """A point with its ``--set`` items, values of the varied paths, id and (unless invalid) its task."""

    index: int
    id: str
    values: dict[str, Any]
    overrides: list[str]
    task: Task | None
    error: str | None = None

    @property
    def run_args(self) -> str:
        """The ``clustersim run`` options that reproduce this point (without planning)."""
        return " ".join(f"--set {shlex.quote(s)}" for s in self.overrides)


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def point_id(inputs: ScenarioInputs, plan: bool, memo: dict | None = None) -> str:
    """Stable id of a point: 16 hex digits of a hash of the validated scenario, topology and profile.

    ``memo`` (a dict the caller owns) keeps the digests of topology and profile objects shared by
    many points, so a 1,000-point sweep dumps a 70 kB profile once.
    """
    memo = {} if memo is None else memo
    parts = []
    for obj in (inputs.topology, inputs.profile):
        key = id(obj)
        if key not in memo:
            memo[key] = (obj, _digest(obj.model_dump(mode="json")))  # keep obj alive: its id stays unique
        parts.append(memo[key][1])
    return _digest({"scenario": inputs.scenario.model_dump(mode="json"), "topology": parts[0],
                    "profile": parts[1], "plan": plan})[:16]


def prepare_points(study: Study, study_file: Path, extra: list[str] | None = None) -> list[PreparedPoint]:
    """Read every point's files (``--set`` items applied); a point whose files break a rule keeps its error.

    Raises :class:`ClusterSimError` when the scenario cannot be found or every point is invalid
    (a misspelt path, usually), naming the first point's problem.
    """
    try:
        scenario_file = resolve_file(study.scenario, "scenario", base=study_file.resolve().parent)
    except ClusterSimError as exc:
        raise ClusterSimError(exc.reason, file=str(study_file), field="scenario") from None
    cache: dict = {}
    memo: dict = {}
    out: list[PreparedPoint] = []
    for p in expand(study, extra):
        try:
            with limits(max_events=study.max_events):
                inputs = read_inputs(scenario_file, p.overrides, cache=cache)
        except ClusterSimError as exc:
            pid = _digest({"scenario_file": str(scenario_file), "overrides": p.overrides, "plan": study.plan})[:16]
            out.append(PreparedPoint(p.index, pid, p.values, p.overrides, None, portable_message(exc)))
            continue
        pid = point_id(inputs, study.plan, memo)
        out.append(PreparedPoint(p.index, pid, p.values, p.overrides, Task(pid, inputs, study.plan, study.max_events)))
    if out and all(p.task is None for p in out):
        first = out[0]
        raise ClusterSimError(f"every point is invalid; point 0 ({first.run_args or 'no --set'}): {first.error}",
                              file=str(study_file))
    return out


def find_planner() -> Callable:
    """The planner's entry point :func:`clustersim.plan.plan_point`.

    Contract: ``plan_point(inputs: ScenarioInputs) -> (ScenarioInputs, RunResult)``, the fastest
    parallel mix of ``inputs`` that fits in memory and its simulated result.
    """
    from clustersim.plan import plan_point  # same layer as sweep; imported when a study plans

    return plan_point


def _simulate(inputs: ScenarioInputs):
    from clustersim.simulate.band import with_host_evidence
    from clustersim.simulate.run import run_scenario

    rs = build_resolved(inputs)
    return inputs, with_host_evidence(run_scenario(rs), rs)


def _plan(inputs: ScenarioInputs):
    return find_planner()(inputs)


def _columns(inputs: ScenarioInputs, res, planned: bool) -> dict[str, Any]:
    sc = inputs.scenario
    par, tr = sc.parallelism, sc.training
    d = res.to_dict()
    mem = d.get("memory") or {}
    row: dict[str, Any] = {
        "scenario": sc.name, "topology": inputs.topology.name, "gpu": inputs.topology.gpu_spec.name,
        "profile": inputs.profile.name, "fidelity": res.fidelity, "n_gpus": res.n_gpus,
        "nodes": _hosts(inputs, res), "planned": planned,
        "model": (sc.model.preset or "custom") if sc.model is not None else "job",
    }
    # the training columns describe a transformer; a generic job leaves them empty
    training = {
        "params": d.get("params"), "dp": par.dp, "tp": par.tp, "pp": par.pp, "virtual_stages": par.virtual_stages,
        "schedule": par.schedule, "zero": par.zero, "sequence_parallel": par.sequence_parallel,
        "micro_batch": tr.micro_batch, "global_batch": tr.global_batch,
        "seq_len": sc.model.seq_len if sc.model is not None else None, "dtype": tr.precision.params,
    }
    row.update(training if sc.model is not None else dict.fromkeys(training))
    row.update({"step_time_s": res.step_time_s, "tokens_per_s": res.tokens_per_s, "samples_per_s": res.samples_per_s,
                "mfu": res.mfu, "tflops_per_gpu": d.get("tflops_per_gpu")})
    for k in BREAKDOWN_KEYS:
        row[f"breakdown_{k}_s"] = float(res.breakdown.get(k, 0.0))
    row["peak_memory_bytes"] = mem.get("peak_bytes_per_gpu")
    row["memory_total_needed_bytes"] = mem.get("total_needed_bytes")
    row["memory_capacity_bytes"] = mem.get("capacity_bytes")
    row["fits"] = mem.get("fits")
    ev = d.get("evidence")   # the step's band and what it rests on (clustersim.simulate.evidence)
    if ev:
        row["band_half_width"] = ev["band"]["half_width"]
        row["band_lo_s"], row["band_hi_s"] = ev["band"]["step_time_s"]
        row["evidence"] = ", ".join(f"{c} {'<1' if v < 0.005 else f'{100 * v:.0f}'}%"
                                    for c, v in sorted(ev["step"].items(), key=lambda kv: -kv[1]))
    row["status"], row["error"] = "ok", None
    return row


def portable_message(exc: ClusterSimError) -> str:
    """``exc``'s message with its file relative to the working directory (the sweep's tables and journal
    travel with the output folder: an absolute path names one machine's checkout).

    >>> import os
    >>> portable_message(ClusterSimError("bad", file=os.path.join(os.getcwd(), "scenarios", "x.yaml")))
    'scenarios/x.yaml: bad'
    """
    if exc.file and os.path.isabs(exc.file):
        try:
            rel = os.path.relpath(exc.file)
        except ValueError:  # another drive (Windows): keep it
            rel = exc.file
        return ClusterSimError(exc.reason, file=rel, field=exc.field).message
    return exc.message


def error_columns(message: str) -> dict[str, Any]:
    """The columns of a point that could not be simulated: every input and output empty but the error."""
    row: dict[str, Any] = {k: None for k in (*INPUT_COLUMNS, *OUTPUT_COLUMNS)}
    row["status"], row["error"] = "error", message
    return row


def evaluate_point(task: Task) -> dict[str, Any]:
    """Simulate (or plan) one point; runs in a worker. Returns ``{"id", "row", "wall_s"}``.

    A rule the point breaks (a :class:`ClusterSimError`, such as degrees that do not multiply to
    the GPU count) becomes an error row: the result of that point, kept like any other.
    """
    t0 = time.perf_counter()
    try:
        with limits(max_events=task.max_events):
            inputs, res = (_plan if task.plan else _simulate)(task.inputs)
        row = _columns(inputs, res, task.plan)
    except ClusterSimError as exc:
        row = error_columns(portable_message(exc))
    return {"id": task.id, "row": _plain(row), "wall_s": time.perf_counter() - t0}


def _hosts(inputs: ScenarioInputs, res) -> int:
    """Hosts (node replicas) the point's ranks span: ceil(GPUs / GPUs per node of the topology)."""
    per = inputs.topology.node.gpus
    return -(-res.n_gpus // per)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """Python scalars only (numpy scalars become int/float), so records are JSON and compare exactly."""
    out = {}
    for k, v in row.items():
        if hasattr(v, "item") and not isinstance(v, (str, bytes)):
            v = v.item()
        out[k] = v
    return out
