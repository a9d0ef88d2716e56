"""``clustersim goodput``: expected goodput of a checkpointed run of a scenario under failures."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import console, print_json


def render_goodput(d: dict) -> None:
    """The goodput report as one table: failures, checkpoint, the intervals and the Monte-Carlo check."""
    from rich.table import Table

    from clustersim.units import format_bytes, format_time

    t = Table(title=f"goodput: {d['scenario']} on {d['n_gpus']:,} GPUs ({d['n_nodes']:,} nodes), "
                    f"{d['run_work_s'] / 86400:g} days of training", show_header=True)
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_row("system MTBF", format_time(d["system_mtbf_s"]))
    t.add_row("expected failures", f"{d['expected_failures']:,.1f}")
    t.add_row("checkpoint size", format_bytes(d["checkpoint_bytes"]))
    t.add_row("checkpoint write", format_time(d["checkpoint_write_s"]))
    t.add_row("restart + re-queue", format_time(d["restart_s"]))
    for k in ("young", "daly", "best"):
        t.add_row(f"interval ({k})", f"{format_time(d['intervals_s'][k])}  goodput {100 * d['goodput'][k]:.2f} %")
    mc = d["monte_carlo"]
    t.add_row("Monte-Carlo at best", f"{100 * mc['goodput']:.2f} % [{100 * mc['ci_low']:.2f}, {100 * mc['ci_high']:.2f}] "
              f"({100 * mc['confidence']:g} % CI, {mc['trials']} runs) "
              + ("agrees" if mc["agrees"] else "[red]DISAGREES[/]"))
    t.add_row("expected wall time", format_time(d["expected_wall_s"]))
    console.print(t)


def register(root: typer.Typer) -> None:
    """Attach ``goodput`` to the root app."""

    @root.command("goodput")
    def goodput_cmd(
        scenario: Path = typer.Argument(..., help="Scenario YAML file (its model gives the checkpoint size, its cluster the GPU and node counts)."),
        mtbf_gpu_hours: Optional[float] = typer.Option(None, "--mtbf-gpu-hours", help="Mean time between failures of one GPU (hours), all causes charged to GPUs."),
        mtbf_node_hours: Optional[float] = typer.Option(None, "--mtbf-node-hours", help="Mean time between failures of one node (hours): host, NIC, PSU..."),
        ckpt_write_GBps: float = typer.Option(..., "--ckpt-write-GBps", help="Aggregate checkpoint write bandwidth to storage, GB/s (1e9 bytes/s)."),
        restart_min: float = typer.Option(..., "--restart-min", help="Minutes from a failure to training again: re-queue, restart, reload the checkpoint."),
        run_days: float = typer.Option(..., "--run-days", help="Days of useful training work the run must complete."),
        gpus: Optional[int] = typer.Option(None, "--gpus", help="Scale to this many GPUs (nodes of the scenario's size); default: the scenario's cluster."),
        ckpt_GB: Optional[float] = typer.Option(None, "--ckpt-GB", help="Checkpoint size in GB; default: weights + optimizer state of the scenario's model."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a scenario field (repeatable)."),
        trials: int = typer.Option(2000, "--trials", help="Monte-Carlo runs."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Monte-Carlo seed; default: the scenario's simulation.seed."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    ) -> None:
        """Expected goodput of a run under failures and the checkpoint interval that maximises it.

        Closed form (Daly's exact expectation; Young's and Daly's intervals) beside a seeded
        Monte-Carlo of the same model. Failure rates add over GPUs and nodes. See
        docs/goodput-and-faults.md.

        Examples:

          clustersim goodput scenarios/llama3-405b.yaml --mtbf-gpu-hours 50677 --ckpt-write-GBps 2000 --restart-min 10 --run-days 54

          clustersim goodput scenarios/gpt3-175b.yaml --mtbf-gpu-hours 50000 --mtbf-node-hours 100000 --ckpt-write-GBps 100 --restart-min 15 --run-days 30 --gpus 16384 --json
        """
        from clustersim.reliability.scenario_goodput import scenario_goodput

        d = scenario_goodput(scenario, overrides=set_ or [], mtbf_gpu_hours=mtbf_gpu_hours,
                             mtbf_node_hours=mtbf_node_hours, ckpt_write_GBps=ckpt_write_GBps,
                             restart_min=restart_min, run_days=run_days, gpus=gpus, ckpt_GB=ckpt_GB, trials=trials,
                             seed=seed)
        if as_json:
            print_json(d)
        else:
            render_goodput(d)
