"""``clustersim compare SCENARIO LOG``: a real training log's step time beside the prediction."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import console, print_json


def render_compare(d: dict) -> None:
    """One row per log: measured (warm-up-free median) and predicted step, error, memory where the log has it."""
    from rich.table import Table

    from clustersim.units import format_bytes, format_time

    t = Table(title=f"{Path(d['scenario']).name}: measured vs predicted step (first {d['warmup_steps']} steps left out)")
    for col in ("log", "steps", "measured", "predicted", "error", "memory", "predicted", "error"):
        t.add_column(col, justify="left" if col.startswith("log") else "right", no_wrap=True)
    for r in d["rows"]:
        mem = ("-", "-", "-")
        if r.get("measured_memory_bytes"):
            err = f"{100 * r['memory_error']:+.1f} %" if r.get("memory_error") is not None else "-"
            mark = "*" if r["memory_kind"] == "max_reserved" else ""
            mem = (format_bytes(r["measured_memory_bytes"]) + mark,
                   format_bytes(r["predicted_memory_bytes"]) if r.get("predicted_memory_bytes") else "-", err)
        t.add_row(Path(r["log"]).name, str(r["steps_used"]), format_time(r["measured_step_s"]),
                  format_time(r["predicted_step_s"]), f"{100 * r['error']:+.1f} %", *mem)
    console.print(t)
    if any(r.get("memory_kind") == "max_reserved" for r in d["rows"]):
        console.print("* the allocator's peak reserved memory (torchtitan); the others its peak allocated memory",
                      highlight=False, markup=False, soft_wrap=True)
    ev = d["evidence"]
    console.print(f"prediction: {ev['fidelity']} fidelity, topology {Path(ev['topology_file']).name}, profile "
                  f"{Path(ev['profile_file']).name} (files in --json)",
                  highlight=False, markup=False, soft_wrap=True)


def register(root: typer.Typer) -> None:
    """Attach ``compare`` to the root app."""

    @root.command("compare")
    def compare_cmd(
        scenario: Path = typer.Argument(..., help="Scenario YAML of the run the log comes from."),
        log: Path = typer.Argument(..., help="A training log, or a folder of them (one row each)."),
        warmup: int = typer.Option(2, "--warmup", help="Leave out the records that cover any of the first N steps."),
        fmt: Optional[str] = typer.Option(None, "--format", help="megatron | torchtitan | mlperf | jsonl (default: found)."),
        fidelity: Optional[str] = typer.Option(None, "--fidelity", help="flow | analytical (default: the scenario's)."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a scenario field (repeatable)."),
        as_json: bool = typer.Option(False, "--json", help="Print the comparison as one JSON document."),
    ) -> None:
        """Measured step time (the median after warm-up) and memory of a real run vs the prediction.

        Reads Megatron-LM's "elapsed time per iteration (ms)" lines, torchtitan's step metrics, MLPerf
        :::MLLOG block timestamps or JSON lines of {"step", "step_time_s"}.

        Examples:

          clustersim compare scenarios/gpt3-175b.yaml megatron.log

          clustersim compare llama3-8b.yaml logs/ --warmup 5 --json
        """
        from clustersim.importers.compare import compare

        d = compare(scenario, log, warmup=warmup, fmt=fmt, fidelity=fidelity, overrides=set_ or [])
        if as_json:
            print_json(d)
        else:
            render_compare(d)
