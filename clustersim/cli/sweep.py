"""``clustersim sweep``: run a what-if study (points on a local pool, Dask or Slurm) and summarise it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import console, err_console, print_json


class _Bar:
    """A rich progress bar on stderr with the rate (points/s) and the time left."""

    def __init__(self, title: str, enabled: bool):
        self.title, self.enabled = title, enabled
        self.progress = None
        self.task = None

    def __call__(self, finished: int, total: int) -> None:
        if not self.enabled or total == 0:
            return
        if self.progress is None:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            from rich.text import Text

            class Rate(ProgressColumn):
                def render(self, task):
                    return Text(f"{task.speed:.2f} points/s" if task.speed else "- points/s")

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), Rate(),
                                     TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                     console=err_console, transient=False)
            self.progress.start()
            self.task = self.progress.add_task(self.title, total=total)
        self.progress.update(self.task, completed=finished)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def render_sweep(d: dict, res) -> None:
    """One row per point, the files written, and the first failure if any point failed."""
    from rich.table import Table

    from clustersim.units import format_time

    varied = list(res.study.varied)
    t = Table(title=f"{d['study']}: {d['points']} points ({d['evaluated']} run now, {d['reused']} from the journal)")
    t.add_column("#", justify="right")
    for v in varied:
        t.add_column(v, justify="right")
    for col in ("GPUs", "step time", "band", "tokens/s", "MFU", "memory fits", "evidence"):
        t.add_column(col, justify="right")
    for r in d["rows"]:
        cells = [str(r["point"])] + ["" if r.get(v) is None else str(r.get(v)) for v in varied]
        if r["status"] != "ok":
            cells += ["", f"[red]error[/]", "", "", "", "", ""]
        else:
            cells += [str(r["n_gpus"]), format_time(r["step_time_s"]),
                      "" if r.get("band_half_width") is None else f"+-{100 * r['band_half_width']:.0f}%",
                      "" if r["tokens_per_s"] is None else f"{r['tokens_per_s']:,.0f}",
                      "" if r["mfu"] is None else f"{100 * r['mfu']:.1f} %",
                      "" if r["fits"] is None else ("yes" if r["fits"] else "[red]NO[/]"), r.get("evidence") or ""]
        t.add_row(*cells)
    console.print(t)
    for key, path in d["files"].items():
        console.print(f"{key}: {path}", highlight=False)
    if d["failed"]:
        first = next(r for r in d["rows"] if r["status"] != "ok")
        console.print(f"[yellow]{d['failed']} point(s) could not be simulated[/]; point {first['point']}: "
                      f"{first['error']}", highlight=False)


def register(root: typer.Typer) -> None:
    """Attach ``sweep`` to the root app."""

    @root.command("sweep")
    def sweep_cmd(
        study: Path = typer.Argument(..., help="Study YAML file (or a shipped study name such as study-pi-scaling)."),
        out: Optional[Path] = typer.Option(None, "-o", "--out", help="Output folder (default sweep-<study name>); an earlier run there resumes."),
        executor: str = typer.Option("local", "--executor", help="local (process pool), serial, dask or slurm."),
        address: Optional[str] = typer.Option(None, "--address", help="Dask scheduler, tcp://host:8786 (default: a local Dask cluster)."),
        max_jobs: Optional[int] = typer.Option(None, "--max-jobs", help="Worker processes (local, dask) or Slurm array tasks running at once."),
        partition: Optional[str] = typer.Option(None, "--partition", help="Slurm partition (--executor slurm)."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a field of every point: --set simulation.fidelity=analytical (repeatable)."),
        fresh: bool = typer.Option(False, "--fresh", help="Forget finished points in the output folder and run them all again."),
        no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document (every row included)."),
    ) -> None:
        """Run a what-if study: every point of its axes, then CSV, Parquet and PNG plots.

        A study varies --set paths of one scenario (topology.* and profile.* paths change its
        topology and profile files) as a grid, a list or zipped axes. An interrupted sweep run
        again with the same -o resumes without redoing finished points.

        Examples:

          clustersim sweep scenarios/study-pi-scaling.yaml -o out/pi

          clustersim sweep study-gpt3-175b-scaling --max-jobs 2 --json

          clustersim sweep study-nic-bandwidth --executor dask --address tcp://10.0.0.5:8786

          clustersim sweep study-llama3-405b --executor slurm --max-jobs 16 --partition cpu

          clustersim sweep study-pi-scaling --executor serial --set simulation.fidelity=flow --fresh
        """
        from clustersim.errors import ClusterSimError
        from clustersim.sweep.executors import EXECUTORS
        from clustersim.sweep.runner import run_study

        if executor not in EXECUTORS:
            raise ClusterSimError(f"--executor must be one of {', '.join(EXECUTORS)}, not {executor!r}", field="--executor")
        bar = _Bar(f"sweep {study.stem}", enabled=not no_progress)
        try:
            res = run_study(study, out, executor=executor, address=address, max_jobs=max_jobs, partition=partition,
                            overrides=set_ or [], fresh=fresh, progress=bar)
        finally:
            bar.stop()
        d = res.to_dict()
        if as_json:
            print_json(d)
        else:
            render_sweep(d, res)
        if d["failed"] == d["points"]:
            raise ClusterSimError("no point could be simulated", file=str(study))
