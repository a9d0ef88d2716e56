"""``clustersim compare SCENARIO LOG``: a real run's measured step beside the simulator's prediction.

The log (:mod:`clustersim.importers.logs`) gives the median step time after warm-up and, where it has
one, the peak memory; the scenario is simulated once (:func:`clustersim.simulate.run.run_scenario`) and
the error is ``(predicted - measured) / measured``. The prediction carries its evidence: the fidelity,
the topology and profile files it read and where the step goes. A folder of logs is compared log by log
against the same scenario, one row each. A check, never a fit: nothing is tuned to the log.
"""

from __future__ import annotations

from pathlib import Path

from clustersim.errors import ClusterSimError, require_file
from clustersim.importers.logs import median_step, read_log

#: log files a folder is searched for
LOG_SUFFIXES = (".log", ".txt", ".jsonl", ".out")


def _prediction(scenario: str | Path, fidelity: str | None, overrides: list[str] | None) -> dict:
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario

    resolved = resolve_scenario(scenario, overrides=overrides or [])
    res = run_scenario(resolved, fidelity=fidelity)
    sc = resolved.scenario
    mem = res.memory or {}
    return {"step_time_s": res.step_time_s, "memory": mem, "gpus": resolved.cluster.n_gpus,
            "global_batch": sc.training.global_batch, "seq_len": sc.model.seq_len if sc.model else None,
            "evidence": {"fidelity": res.fidelity,
                         "topology_file": str(resolved.topology_file), "profile_file": str(resolved.profile_file),
                         "breakdown_s": dict(res.breakdown)}}


def _row(log: Path, pred: dict, warmup: int, fmt: str | None) -> dict:
    m = read_log(log, fmt, global_batch=pred["global_batch"])
    tokens = pred["global_batch"] * pred["seq_len"] if pred["seq_len"] else None
    times = m.step_times(warmup, tokens_per_step=tokens, gpus=pred["gpus"])
    measured = median_step(times, str(log))
    row = {"log": str(log), "format": m.fmt, "steps_used": len(times), "records": len(m.records),
           "measured_step_s": measured, "predicted_step_s": pred["step_time_s"],
           "error": (pred["step_time_s"] - measured) / measured}
    if m.memory_bytes:
        mem = pred["memory"]
        predicted = mem.get("peak_allocated_bytes")
        if m.memory_kind == "max_reserved" and predicted is not None:
            predicted += mem.get("fragmentation_bytes", 0.0)  # the allocator's reserve above its peak allocation
        row.update(measured_memory_bytes=m.memory_bytes, memory_kind=m.memory_kind, predicted_memory_bytes=predicted,
                   memory_error=(predicted - m.memory_bytes) / m.memory_bytes if predicted else None)
    return row


def logs_of(path: str | Path) -> list[Path]:
    """The log itself, or every log file of a folder (sorted by name)."""
    p = Path(path)
    if p.is_dir():
        found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix in LOG_SUFFIXES)
        if not found:
            raise ClusterSimError(f"no log files ({', '.join(LOG_SUFFIXES)}) in this folder", file=str(p))
        return found
    return [require_file(p)]


def compare(scenario: str | Path, log: str | Path, *, warmup: int = 2, fmt: str | None = None,
            fidelity: str | None = None, overrides: list[str] | None = None) -> dict:
    """Measured vs predicted for ``log`` (a file or a folder of them) and ``scenario`` (see the module docstring).

    ``warmup``: records covering any of the first ``warmup`` steps are left out.
    """
    if warmup < 0:
        raise ClusterSimError(f"must be >= 0, got {warmup}", field="--warmup")
    files = logs_of(log)  # a missing log is refused before the simulation
    pred = _prediction(scenario, fidelity, overrides)
    rows = [_row(f, pred, warmup, fmt) for f in files]
    return {"scenario": str(scenario), "warmup_steps": warmup, "predicted_step_s": pred["step_time_s"],
            "evidence": pred["evidence"], "rows": rows}
