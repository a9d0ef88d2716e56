"""``clustersim report``: one self-contained HTML page for a run, a plan or a sweep result.

The command reads what ``clustersim run --json``, ``clustersim plan --json`` or ``clustersim
sweep`` wrote (:mod:`clustersim.report.load` tells which), renders its page
(:mod:`clustersim.report.pages`) and writes it; it simulates nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import console


def register(root: typer.Typer) -> None:
    """Attach ``report`` to the root app."""

    @root.command("report")
    def report_cmd(
        results: Path = typer.Argument(..., help="clustersim run --json or plan --json output, a sweep's output "
                                                 "folder, its results.csv or sweep --json output."),
        out: Path = typer.Option(Path("report.html"), "-o", "--out", help="HTML file to write."),
        trace: Optional[Path] = typer.Option(None, "--trace", help="A run's trace (clustersim run --trace) to draw "
                                                                   "its timeline; runs only."),
    ) -> None:
        """Write one self-contained HTML page (tables, inline SVG plots, no scripts, nothing fetched)
        for a run, a plan or a sweep; the kind is read from the input.

        A run: key metrics, breakdown, memory, busiest links (and the timeline with --trace). A
        plan: the funnel from every mix to the best, the best plans and their breakdown, and which
        constraint removed how many mixes. A sweep: scaling, breakdown and sensitivity plots, the
        sweep's own PNG plots and one row per point.

        Examples:

          clustersim run scenarios/gpt-1b-ddp.yaml --json --trace t.json > run.json

          clustersim report run.json --trace t.json -o run.html

          clustersim plan scenarios/ref-tp2.yaml --json > plan.json

          clustersim report plan.json -o plan.html

          clustersim sweep study-pi-scaling -o out/pi

          clustersim report out/pi -o pi.html
        """
        from clustersim import __version__
        from clustersim.errors import ClusterSimError
        from clustersim.report.html import write_page
        from clustersim.report.load import load_results, load_trace
        from clustersim.report.pages import render_results

        res = load_results(results)
        events = None
        if trace is not None:
            if res.kind != "run":
                raise ClusterSimError(f"--trace draws a run's timeline; {results} is a {res.kind}", field="--trace")
            events = load_trace(trace)
        write_page(out, render_results(res, events, version=__version__))
        console.print(f"{res.kind} report written to {out}", highlight=False)
