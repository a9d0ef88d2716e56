"""Run a study: prepare its points, evaluate the unfinished ones on an executor, write tables and plots.

Output folder (``-o``, default ``sweep-<study name>``):

* ``points.jsonl``: the journal, one fsynced line per finished point (the resume state);
* ``results.csv`` and ``results.parquet``: one row per point, every input and output column;
  identical inputs give byte-identical files, whichever executor ran the points;
* ``timings.csv``: the wall time of each point's evaluation (kept apart: it varies run to run);
* the study's PNG plots.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from clustersim.sweep.executors import make_executor
from clustersim.sweep.point import INPUT_COLUMNS, OUTPUT_COLUMNS, error_columns, evaluate_point, prepare_points
from clustersim.sweep.plots import write_plots
from clustersim.sweep.store import ResultStore
from clustersim.sweep.study import Study, load_study
from clustersim.sweep.tables import write_csv, write_parquet

Progress = Callable[[int, int], None]  # (points finished in this run, points to run)


@dataclass
class SweepResult:
    """What a sweep produced. ``to_dict()`` is the ``--json`` document."""

    study: Study
    study_file: Path
    folder: Path
    columns: list[str]
    rows: list[dict[str, Any]]
    evaluated: int
    reused: int
    files: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Rows of points that could not be simulated (status error)."""
        return [r for r in self.rows if r.get("status") != "ok"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary with every row."""
        return {"study": self.study.name, "study_file": str(self.study_file), "folder": str(self.folder),
                "points": len(self.rows), "evaluated": self.evaluated, "reused": self.reused,
                "failed": len(self.failed), "files": dict(self.files), "columns": list(self.columns),
                "rows": self.rows, "wall_s": self.wall_s}


def _columns(study: Study, rows: list[dict[str, Any]]) -> list[str]:
    varied = list(study.varied)
    for r in rows:  # list axes may add paths only some points set
        varied += [k for k in r.get("_values", {}) if k not in varied]
    return ["point", "id", *varied, "run_args", *INPUT_COLUMNS, *OUTPUT_COLUMNS]


def run_study(source: str | Path, out_dir: str | Path | None = None, *, executor: str = "local",
              address: str | None = None, max_jobs: int | None = None, partition: str | None = None,
              overrides: list[str] | None = None, fresh: bool = False,
              progress: Progress | None = None) -> SweepResult:
    """Run every unfinished point of a study and write its tables and plots.

    Parameters
    ----------
    source: study file or shipped study name.
    out_dir: output folder (default ``sweep-<name>`` in the cwd); a folder holding an earlier
        run of the study resumes it: finished points (by id) are not evaluated again.
    executor: ``local`` (process pool), ``serial``, ``dask`` or ``slurm``.
    address: Dask scheduler address (``--executor dask``); none starts a local Dask cluster.
    max_jobs: worker processes (local, dask) or concurrently running array tasks (slurm).
    partition: Slurm partition (``--executor slurm``).
    overrides: ``--set`` items applied to every point after the study's axes.
    fresh: forget the journal and evaluate every point again.
    progress: called as ``progress(finished, total)`` at the start and after each point.
    """
    t0 = time.perf_counter()
    study, study_file = load_study(source)
    points = prepare_points(study, study_file, overrides)
    folder = Path(out_dir) if out_dir is not None else Path(f"sweep-{study.name}")
    store = ResultStore(folder)
    done = {} if fresh else store.load()
    todo, queued = [], set()
    for p in points:
        if p.task is not None and p.id not in done and p.id not in queued:
            todo.append(p.task)
            queued.add(p.id)
    reused = sum(1 for p in points if p.task is not None and p.id in done)
    if progress:
        progress(0, len(todo))
    with store.open(fresh=fresh):
        if todo:
            with make_executor(executor, address=address, max_jobs=max_jobs, folder=folder / "slurm",
                               partition=partition) as ex:
                for n, rec in enumerate(ex.map_unordered(evaluate_point, todo), start=1):
                    store.append(rec)
                    done[rec["id"]] = rec
                    if progress:
                        progress(n, len(todo))
    rows, timings = [], []
    for p in points:
        rec = done.get(p.id) if p.task is not None else None
        cols = rec["row"] if rec is not None else error_columns(p.error or "not evaluated")
        rows.append({"point": p.index, "id": p.id, **p.values, "run_args": p.run_args, **cols, "_values": p.values})
        timings.append({"point": p.index, "id": p.id, "wall_s": rec["wall_s"] if rec else None})
    columns = _columns(study, rows)
    for r in rows:
        del r["_values"]
    files = {"journal": str(store.path), "csv": str(folder / "results.csv"),
             "parquet": str(folder / "results.parquet"), "timings": str(folder / "timings.csv")}
    write_csv(folder / "results.csv", rows, columns)
    write_parquet(folder / "results.parquet", rows, columns)
    write_csv(folder / "timings.csv", timings, ["point", "id", "wall_s"])
    for path in write_plots(rows, study.plots, folder, study.name, study.varied):
        files[path.stem] = str(path)
    return SweepResult(study, study_file, folder, columns, rows, evaluated=len(todo), reused=reused, files=files,
                       wall_s=time.perf_counter() - t0)
