"""``clustersim run``: simulate one training step (or a generic job) of a scenario.

The command composes the layers: :mod:`clustersim.simulate` runs the step, and its result goes
to the writers above it (the Chrome trace of :mod:`clustersim.trace.chrome`, the HTML report of
:mod:`clustersim.report.html`), which render what they are given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import budget, console, max_events_option, max_memory_option, print_json, progress

app = typer.Typer(help="run commands.", no_args_is_help=True, add_completion=False)


def render_jobs(d: dict) -> None:
    """The per-job table of a ``jobs:`` scenario: step time together and alone, slowdown."""
    from rich.table import Table

    from clustersim.units import format_time

    t = Table(title=f"{len(d['jobs'])} jobs on one fabric ({d['placed_gpus']} of {d['n_gpus']} GPUs)")
    for col, just in (("job", "left"), ("GPUs", "right"), ("nodes", "right"), ("step", "right"),
                      ("alone", "right"), ("slowdown", "right"), ("tokens/s", "right")):
        t.add_column(col, justify=just)
    for j in d["jobs"]:
        nodes = ",".join(map(str, j["nodes"][:4])) + (",..." if len(j["nodes"]) > 4 else "")
        t.add_row(j["name"], str(j["gpus"]), nodes, format_time(j["step_time_s"]), format_time(j["alone_step_time_s"]),
                  f"x{j['slowdown']:.3f}", f"{j['tokens_per_s']:,.0f}" if j.get("tokens_per_s") else "-")
    console.print(t)


def render_run(d: dict) -> None:
    """The step as tables: key metrics, where the step goes, memory, faults, busiest links."""
    from rich.table import Table

    from clustersim.units import format_bytes, format_time

    if d.get("jobs"):
        render_jobs(d)

    t = Table(title=f"{d['scenario']} ({d['fidelity']}, {d['n_gpus']} GPUs)", show_header=True)
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_row("step time", format_time(d["step_time_s"]))
    if d.get("tokens_per_s") is not None:
        t.add_row("tokens/s", f"{d['tokens_per_s']:,.0f}")
        t.add_row("tokens/s/GPU", f"{d['tokens_per_s'] / d['n_gpus']:,.1f}")
    if d.get("samples_per_s") is not None:
        t.add_row("samples/s", f"{d['samples_per_s']:,.2f}")
    if d.get("mfu") is not None:
        t.add_row("MFU (model FLOPs / bf16 peak)", f"{100 * d['mfu']:.1f} %")
        t.add_row("model TFLOP/s/GPU", f"{d['tflops_per_gpu']:.1f}")
    if d.get("clock_slowdown") is not None:
        t.add_row("sustained clock (GEMM, attention)",
                  f"x{d['clock_slowdown']:.3f} at duty {100 * d['compute_duty']:.0f} %")
    if d.get("moe"):  # the routing load the MoE step assumed
        m = d["moe"]
        t.add_row("MoE routing (EP x expert TP)",
                  f"ep {m['ep']} x {m['expert_tp']}, {m['dispatcher']}; imbalance x{m['imbalance']:.2f}, "
                  f"tokens/expert mean {m['tokens_per_expert_mean']:,.0f} max {m['tokens_per_expert_max']:,.0f}")
    if d.get("cp"):  # the K/V exchange the context-parallel step assumed
        c = d["cp"]
        t.add_row("context parallel (K/V per layer, sent)",
                  f"cp {c['cp']}, {c['algorithm']}; {c['local_tokens']:,} tokens/rank; "
                  f"fwd {format_bytes(c['send_bytes_per_layer']['forward'])} bwd "
                  f"{format_bytes(c['send_bytes_per_layer']['backward'])}")
    console.print(t)
    if d.get("compute_tables"):  # which compute model the step ran on (a fitted profile may carry none)
        console.print(f"profile compute tables: {d['compute_tables']}", highlight=False)
    b = Table(title="where the step goes (per rank, averaged)")
    b.add_column("part")
    b.add_column("time", justify="right")
    b.add_column("share", justify="right")
    for k, v in d["breakdown"].items():
        if v > 0:
            b.add_row(k, format_time(v), f"{100 * d['breakdown_fraction'][k]:.1f} %")
    console.print(b)
    if d.get("evidence"):   # what the step rests on, and the band its held-out errors give
        console.print(d["evidence"]["summary"], highlight=False)
    from clustersim.report.kinds import host_bound_note

    note = host_bound_note(d)
    if note:
        console.print(note, highlight=False)
    if d.get("memory"):
        m = d["memory"]
        mt = Table(title=f"memory per GPU (fullest pipeline stage {m['stage']})")
        mt.add_column("kind")
        mt.add_column("bytes", justify="right")
        for k in ("params", "grads", "optimizer", "activations", "loss_transient", "ddp_buckets",
                  "fsdp_gathered", "optimizer_transient", "pipeline_outputs", "pipeline_recv_buffers", "cp_buffers",
                  "peak_allocated_bytes",
                  "cuda_context_bytes", "nccl_buffer_bytes", "fragmentation_bytes", "total_needed_bytes",
                  "ddp_rebuild_transient_bytes", "capacity_bytes"):
            if k in m and (m[k] or k in ("activations", "peak_allocated_bytes", "total_needed_bytes")):
                mt.add_row(k, format_bytes(m[k]))
        mt.add_row("fits (total needed)", "yes" if m["fits"] else "[red]NO[/]")
        console.print(mt)
    if d.get("faults"):
        f = d["faults"]
        ft = Table(title=f"faults: slowdown x{f['slowdown']:.3f} against the healthy cluster "
                         f"({format_time(f['healthy_step_time_s'])} per step)")
        ft.add_column("cause")
        ft.add_column("where")
        ft.add_column("detail", justify="right")
        for c in f["causes"]:
            where = ", ".join(c["links"][:3]) + (" ..." if len(c["links"]) > 3 else "") if "links" in c else \
                f"rank {c['rank']}" if "rank" in c else f"node {c['node']}" if "node" in c else f"{c.get('more_ranks')} more ranks"
            detail = {"link_degraded": lambda: f"fraction {c['fraction']:g}, busy {100 * c.get('busy_fraction', 0):.0f} %",
                      "link_down": lambda: f"{c.get('rerouted_pairs', 0)} rank pairs rerouted",
                      "straggler": lambda: (f"host x{c.get('host_slowdown', c.get('host_slowdown_max_of_rest', 1)):.3f}"
                                            if "host_slowdown" in c or "host_slowdown_max_of_rest" in c else
                                            f"compute x{c.get('slowdown', c.get('slowdown_max_of_rest', 1)):.3f}"),
                      "node_lost": lambda: c.get("effect", "")}[c["kind"]]()
            ft.add_row(c["kind"], where, detail)
        console.print(ft)
    if d.get("links"):
        lt = Table(title="busiest links")
        lt.add_column("link")
        lt.add_column("kind")
        lt.add_column("busy", justify="right")
        for row in d["links"]:
            lt.add_row(row["link"], row["kind"], f"{100 * row['busy_fraction']:.1f} %")
        console.print(lt)


def run_and_write(scenario, *, fidelity: str | None = None, overrides: list[str] | None = None,
                  reduced: bool = True, trace_path=None, html_path=None, band: bool = False):
    """Simulate ``scenario`` and write the requested trace and HTML report.

    Returns ``(result, band)``: the :class:`~clustersim.simulate.run.RunResult` and, with
    ``band``, the (fast, slow) step times at the profile's 95% bounds (else None).

    >>> from clustersim.config.base import shipped_dir
    >>> res, band = run_and_write(shipped_dir("scenario") / "ddp-mlp.yaml", fidelity="analytical")
    >>> res.fidelity, band is None, res.step_time_s > 0
    ('analytical', True, True)
    """
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario

    rs = resolve_scenario(scenario, overrides)
    res = run_scenario(rs, fidelity=fidelity, reduced=reduced,
                       keep_timeline=trace_path is not None or html_path is not None)
    from clustersim.simulate.band import with_host_evidence

    with_host_evidence(res, rs, reduced)   # the host's share of the step measured, not read off the breakdown
    step = res.step
    res.compute_tables = f"{rs.profile.name}: {rs.profile.compute.tables_summary()}" if rs.profile is not None else None
    if trace_path is not None:
        from clustersim.trace.chrome import write_trace

        write_trace(trace_path, step.graph, step.timeline, cluster=step.cluster, title=res.scenario,
                    comm_time=step.comm_time, rank_labels=step.rank_labels, link_loads=step.link_loads)
    if html_path is not None:
        from clustersim.report.html import write_html
        from clustersim.simulate.describe import run_description
        from clustersim.trace.chrome import trace_events

        events = trace_events(step.graph, step.timeline, step.cluster, step.comm_time, rank_labels=step.rank_labels)
        label = str(scenario) if isinstance(scenario, (str, Path)) else None
        write_html(html_path, res.to_dict(), events, run_description(rs, label, reduced))
    lo_hi = None
    if band:
        from clustersim.simulate.band import band_factors, step_time_band

        lo_hi = step_time_band(rs, fidelity=fidelity, reduced=reduced)
        res.band_factors = band_factors(rs.profile)
    return res, lo_hi


def register(root: typer.Typer) -> None:
    """Attach ``run`` to the root app."""

    @root.command("run")
    def run_cmd(
        scenario: Path = typer.Argument(..., help="Scenario YAML file."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a field: --set parallelism.tp=2 (repeatable)."),
        fidelity: Optional[str] = typer.Option(None, "--fidelity", help="flow (discrete-event, links shared) or analytical; default: the scenario's simulation.fidelity (flow)."),
        trace: Optional[Path] = typer.Option(None, "--trace", help="Write a Chrome/Perfetto trace JSON (ui.perfetto.dev)."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
        full: bool = typer.Option(False, "--full", help="Simulate every data-parallel replica (no symmetry reduction)."),
        html: Optional[Path] = typer.Option(None, "--html", help="Write a standalone HTML report (timeline, breakdown, memory, links)."),
        band: bool = typer.Option(False, "--band", help="Also simulate at the profile's 95% confidence bounds and report the step-time band."),
        log_format: Optional[str] = typer.Option(None, "--log-format", help="megatron: print Megatron-LM iteration lines (one per training.steps) instead of the tables."),
        max_memory: Optional[str] = max_memory_option(),
        max_events: Optional[int] = max_events_option(),
    ) -> None:
        """Simulate one training step of a scenario: step time, throughput, MFU, breakdown, memory, links.

        Examples:

          clustersim run scenarios/gpt-1b-ddp.yaml

          clustersim run scenarios/gpt3-175b.yaml --fidelity analytical --json

          clustersim run scenarios/montecarlo-pi.yaml --set cluster.gpus=2 --trace pi.json

          clustersim run scenarios/hybrid-tp2-pp2-dp2.yaml --html step.html

          clustersim run scenarios/gpt-1b-ddp.yaml --band --json

          clustersim run scenarios/two-jobs-shared-fabric.yaml --trace jobs.json

          clustersim run scenarios/ref-single.yaml --log-format megatron > sim.log
        """
        from clustersim.errors import ClusterSimError

        if fidelity is not None and fidelity not in ("flow", "analytical"):
            raise ClusterSimError(f"--fidelity must be flow or analytical, not {fidelity!r}", field="--fidelity")
        if log_format not in (None, "megatron"):
            raise ClusterSimError(f"--log-format must be megatron, not {log_format!r}", field="--log-format")
        with budget(max_memory, max_events), progress(f"simulating {scenario}"):
            res, lo_hi = run_and_write(scenario, fidelity=fidelity, overrides=set_ or [], reduced=not full,
                                       trace_path=trace, html_path=html, band=band)
        d = res.to_dict()
        if lo_hi is not None:
            d["step_time_band_s"] = list(lo_hi)
        if as_json:
            print_json(d)
        elif log_format == "megatron":
            from clustersim.report.megatron_log import iteration_lines

            console.print("\n".join(iteration_lines(d)), highlight=False, markup=False, soft_wrap=True)
        else:
            render_run(d)
            if band:
                lo, hi = d["step_time_band_s"]
                parts = ", ".join(f"{k} x{v:.4g}" for k, v in (d.get("step_time_band_factors") or {}).items() if v)
                console.print(f"step time, 95% band{' (' + parts + ')' if parts else ''}: "
                              f"{lo * 1e3:.4g} .. {hi * 1e3:.4g} ms", highlight=False)
            if trace is not None:
                console.print(f"trace written to {trace} (open in https://ui.perfetto.dev)", highlight=False)
            if html is not None:
                console.print(f"HTML report written to {html}", highlight=False)
