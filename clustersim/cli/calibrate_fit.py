"""`clustersim calibrate fit` and `clustersim calibrate report`.

Thin layer: parse, call :func:`clustersim.calibration.fit.pipeline.fit_files` /
:func:`clustersim.report.profile_check.check_profile`, render. User errors exit with status 2.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import console, err_console, fail, print_json, progress
from clustersim.errors import ClusterSimError


def _warn(msg: str) -> None:
    err_console.print(f"[yellow]warning:[/] {msg}", highlight=False, markup=True)


def _command_line(measurements: list[Path], output: Path, **opts: object) -> str:
    """The fit command as it could be typed again (for the profile's header)."""
    parts = ["clustersim", "calibrate", "fit", *map(str, measurements), "-o", str(output)]
    for key, value in opts.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        parts += [flag] if value is True else [flag, str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def _num(x: float) -> str:
    """3 significant digits, never an exponent: ``22.6``, ``0.123``, ``5,184``."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _size(n: float | None) -> str:
    """Compact binary size: ``0``, ``8K``, ``39.9M``, ``1G``."""
    if not n:
        return "0"
    for letter, scale in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g}{letter}"
    return f"{n:.0f}"


def render_entries(entries, title: str) -> None:
    """The fitted regimes, one small table per context, readable at 80 columns.

    An algbw at the fit's cap (a regime whose time does not grow with size) shows as ``flat``.
    """
    from rich import box
    from rich.table import Table

    from clustersim.calibration.fit import MAX_ALGBW

    cap = MAX_ALGBW / 1e9 * 0.999
    console.print(f"[bold]{title}[/]", highlight=False)
    for e in entries:
        label = f"{e.op}, {e.ranks} ranks" + (f" ({e.scope})" if e.scope else "") + f", {e.mode}"
        label += "".join(f", {k} {v}" for k, v in (("algorithm", e.algorithm), ("protocol", e.protocol)) if v)
        t = Table(title=label, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for col, width in (("sizes", 11), ("alpha us", 8), ("95% CI", 13), ("algbw GB/s", 10), ("95% CI", 15),
                           ("points", 6)):
            t.add_column(col, justify="left" if col == "sizes" else "right", min_width=width, no_wrap=True)
        for sg in e.segments:
            hi = _size(sg.size_max_bytes) if sg.size_max_bytes else ""
            a_ci = f"{_num(sg.alpha_ci_us[0])}-{_num(sg.alpha_ci_us[1])}" if sg.alpha_ci_us else "-"
            if sg.algbw_ci_GBps:
                lo_b, hi_b = sg.algbw_ci_GBps
                b_ci = f">{_num(lo_b)}" if hi_b >= cap else f"{_num(lo_b)}-{_num(hi_b)}"
            else:
                b_ci = "-"
            t.add_row(f"{_size(sg.size_min_bytes)}-{hi}" if hi else f"{_size(sg.size_min_bytes)}+",
                      _num(sg.alpha_us), a_ci, "flat" if sg.algbw_GBps >= cap else _num(sg.algbw_GBps), b_ci,
                      str(sg.points if sg.points is not None else "-"))
        console.print(t)
    if any(sg.algbw_GBps >= cap for e in entries for sg in e.segments):
        console.print("flat: the time does not grow with size in that regime (the file holds the fit's cap, "
                      f"{MAX_ALGBW / 1e9:,.0f} GB/s)", highlight=False)


def _link_bw(lp) -> str:
    """A link class's bandwidth as the fit table shows it."""
    if lp.fraction is None:
        return f"{lp.bandwidth_GBps:.4g} GB/s"
    return f"{lp.fraction:.3g} of line rate" + (f" ({lp.line_rate_GBps:.4g} GB/s)" if lp.line_rate_GBps else "")


def fit_cmd(
    measurements: list[Path] = typer.Argument(..., help="JSON-lines files (Contract 3); nccl-tests logs when the importer is installed."),
    output: Path = typer.Option(..., "-o", "--output", help="Profile YAML to write."),
    name: Optional[str] = typer.Option(None, "--name", help="Profile name (default: the base's name, else the output file's stem)."),
    base: Optional[str] = typer.Option(None, "--base", help="Profile (file or shipped name) to extend: its other entries are kept."),
    holdout: str = typer.Option("none", "--holdout", help="Leave sizes out of the fit for `calibrate report`: odd, even or none."),
    peak_tflops: Optional[float] = typer.Option(None, "--peak-tflops", help="Dense peak of the GEMM dtype (default: from the GPU name in the meta row)."),
    max_segments: int = typer.Option(6, "--max-segments", min=1, max=20, help="Most size regimes per collective."),
    min_sizes: int = typer.Option(3, "--min-sizes", min=2, help="Fewest distinct sizes per regime."),
    ci: str = typer.Option("t", "--ci", help="95% intervals: t (covariance of the weighted fit) or bootstrap (residual bootstrap)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap's random generator."),
    json_out: bool = typer.Option(False, "--json", help="Print the fitted profile as one JSON document."),
    topology: Optional[str] = typer.Option(
        None, "--topology", help="Topology the measurements were taken on (name or YAML; needed for NCCL-level "
        "collective rows unless the meta row or the --base profile names it): fitted link classes record "
        "its line rates, so their efficiency follows what-ifs on other topologies, and NCCL-level collective rows "
        "also give the profile a link model (per link class and protocol an efficiency of those line rates and a "
        "per-step latency, per op a launch floor), used for the rank counts and sizes not measured."),
) -> None:
    """Fit a calibration profile from measurements.

    Examples:

      clustersim calibrate fit profiles/measurements/h200x2/bench-graph.jsonl profiles/measurements/h200x4/bench-graph.jsonl
      --topology hgx-h200 -o my-h200.yaml   (entries and the link_model section)

      clustersim calibrate fit nt_all_reduce.txt --base hgx-h200 -o mine.yaml   (the topology of the base profile)
    """
    from clustersim.calibration.fit.pipeline import fit_files
    from clustersim.collectives.topology_lines import TopologyLines

    # the command as it could be typed again: the profile's header and the link model's method text name it
    command = _command_line(
        measurements, output, name=name, base=base, holdout=None if holdout == "none" else holdout,
        peak_tflops=peak_tflops, max_segments=None if max_segments == 6 else max_segments,
        min_sizes=None if min_sizes == 3 else min_sizes, ci=None if ci == "t" else ci,
        seed=None if ci == "t" else seed, topology=topology)
    try:
        with progress("fitting the profile") as update:
            run = fit_files(measurements, output=output, name=name, base=base, holdout=holdout,
                            peak_tflops=peak_tflops, max_segments=max_segments, min_sizes=min_sizes, ci=ci,
                            seed=seed, topology=topology, open_topology=TopologyLines,
                            command=command, warn=_warn, update=update)
    except ClusterSimError as exc:
        fail(exc)
        return
    for msg in run.warnings:
        _warn(msg)
    if json_out:
        print_json(run.to_dict())
        return
    render_fit(run, output)


def render_fit(run, output: Path) -> None:
    """What ``calibrate fit`` prints: the new collective regimes, then one line per fitted section."""
    meas, profile = run.measurements, run.profile
    render_entries(run.new_entries, f"profile {profile.name} -> {output}")
    c = profile.compute
    console.print(f"links: {', '.join(f'{k}: {v.latency_us:.3g} us, {_link_bw(v)}' for k, v in profile.links.items()) or 'none'}")
    lm = profile.link_model
    if lm is not None:
        pv = lm.provenance
        console.print(f"link model: {', '.join(lm.links)} at {pv.line_rates_GBps} GB/s line rate, {pv.rows} rows "
                      f"(ranks {pv.ranks}, nodes {pv.nodes}), fit residual median {pv.residual_median_pct}%, "
                      f"worst {pv.residual_worst_pct}%")
    if meas.of("gemm"):
        console.print(f"GEMM: efficiency {c.gemm_efficiency} of peak (large), half at {c.gemm_half_flops:.3g} FLOPs, "
                      f"{len(c.gemm_table)} points")
    if meas.of("hbm") or meas.of("launch"):
        console.print(f"HBM {c.hbm_bandwidth_GBps} GB/s, kernel launch {c.kernel_launch_us} us")
    if meas.of("kernel"):
        console.print(f"kernel classes: {len(c.attention_table)} flash-attention, {len(c.gemm_layout_table)} layout "
                      f"GEMM, {len(c.memory_table)} memory-bound, {len(c.clock_table)} sustained-clock points")
    h = profile.host
    if meas.of("framework_call") or meas.of("comm_init") or any(e.mode == "framework" for e in profile.collectives):
        console.print(f"host: framework call {h.framework_call_us} us, per-call overhead {h.per_call_overhead_us} us, "
                      f"comm init {h.comm_init.base_s:.3g} s + {h.comm_init.per_rank_s:.3g} s/rank "
                      f"(measured ranks {h.comm_init.measured_ranks}{', extrapolated' if h.comm_init.extrapolated else ''})")
    if meas.skipped:
        console.print(f"{len(meas.skipped)} line(s) skipped (see warnings above)")
    console.print(f"wrote {output}")


def report_cmd(
    measurements: list[Path] = typer.Argument(..., help="JSON-lines files (Contract 3) with the held-out measurements."),
    profile: str = typer.Option(..., "--profile", "-p", help="Fitted profile (file or shipped name)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Folder for PNG plots, summary.md and report.json."),
    holdout: str = typer.Option("auto", "--holdout", help="Which sizes were held out of the fit: odd, even, none "
                                "(in-sample) or auto (what the profile says it was fitted with; none when it says nothing)."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as one JSON document."),
    transfer: bool = typer.Option(False, "--transfer", help="Also run the link model's size check (fit every other "
                                  "size, predict the rest) and scale check (fit some rank counts, predict the others)."),
    fit_ranks: Optional[str] = typer.Option(None, "--fit-ranks", help="Scale check: rank counts to fit on, e.g. 8,16 "
                                            "(default: all but the largest)."),
    line_GBps: float = typer.Option(450.0, "--line-GBps", help="Transfer checks: one GPU's intra-node line rate, GB/s "
                                    "per direction (18 NVLink4 x 25 = 450)."),
    net_GBps: float = typer.Option(0.0, "--net-GBps", help="Transfer checks: one NIC's line rate, GB/s (400 Gb/s = 50)."),
    nics_per_node: int = typer.Option(0, "--nics-per-node", help="Transfer checks: NICs per node."),
    sm: int = typer.Option(90, "--sm", help="Transfer checks: the GPU's compute capability x 10 (90 Hopper, 80 "
                           "Ampere); NCCL's protocol table depends on it."),
) -> None:
    """Compare a fitted profile with held-out measurements (table, plots, Markdown).

    Collective rows are compared at their held-out sizes; kernel rows (``calibrate bench --kernels``) with the
    profile's compute tables, per kernel class (in-sample when the profile was fitted on them).

    Examples:

      clustersim calibrate report m.jsonl --profile p.yaml -o report/

      clustersim calibrate fit m.jsonl -o p.yaml --holdout odd; clustersim calibrate report m.jsonl --profile p.yaml

      clustersim calibrate report profiles/measurements/h200x2/bench-graph.jsonl profiles/measurements/h200x4/bench-graph.jsonl
      -p hgx-h200 --holdout none --transfer   (size and scale checks, and the link model's learned parameters)

      clustersim calibrate report validation/probes/kernel-bench-repeatability/kernels.jsonl -p hgx-h200   (kernel classes)
    """
    from clustersim.report.profile_check import check_profile

    try:
        with progress("comparing the profile with the measurements") as update:
            res = check_profile(measurements, profile, holdout=holdout, output=output, transfer=transfer,
                                fit_ranks=fit_ranks, line_GBps=line_GBps, net_GBps=net_GBps,
                                nics_per_node=nics_per_node, sm=sm, warn=_warn, update=update)
    except ClusterSimError as exc:
        fail(exc)
        return
    if json_out:
        print_json(res.to_dict())
        return
    render_report(res, output)


def render_report(res, output: Optional[Path]) -> None:
    """What ``calibrate report`` prints: the collective and kernel tables, the files, the transfer checks."""
    from rich.table import Table

    if res.report.rows:
        render_collectives(res.report, res.holdout)
    if res.kernels is not None:
        render_kernels(res.kernels)
    if res.written:
        console.print(f"wrote {len(res.written)} files to {output}")
    for name, c in (res.checks or {}).items():
        if c is None:
            continue
        tt = Table(title=f"{name} check: {c['title']} (link model; fit residual median "
                         f"{c['fit_residual_median_pct']:.1f}%)")
        for col in ("op", "points", ">= 1 MiB mean %", "< 1 MiB mean %", "worst %"):
            tt.add_column(col)
        for row in c["table"]:
            tt.add_row(row["op"], str(row["points"]), f"{row['mean_large_pct']:.1f}", f"{row['mean_small_pct']:.1f}",
                       f"{row['worst_pct']:.1f}")
        console.print(tt)
    if res.params:
        render_parameters(res.params)


def render_kernels(krep) -> None:
    """The kernel classes' table: per class, points, mean and worst |error| and the worst row."""
    from rich.table import Table

    t = Table(title=f"kernel classes: the profile's compute tables ({krep.gpu or '?'}) against "
                    f"{sum(s['points'] for s in krep.summary)} kernel rows, |error| in percent "
                    f"({krep.skipped} rows of other kernels not compared)")
    # the class whole, the numbers short, the worst row cut to what is left of the terminal (readable at 80 columns)
    t.add_column("class", no_wrap=True)
    for col in ("points", "mean %", "max %"):   # |error|, percent
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    t.add_column("worst", no_wrap=True, overflow="ellipsis")
    for s in krep.summary:
        worst = s["max_abs_err_pct"]
        style = "red" if worst > 12 else ("yellow" if worst > 5 else "")
        op = s["worst_op"] if len(s["worst_op"]) <= 20 else s["worst_op"][:19] + "…"
        t.add_row(s["class"], str(s["points"]), f"{s['mean_abs_err_pct']:.1f}",
                  f"[{style}]{worst:.1f}[/]" if style else f"{worst:.1f}", op)
    console.print(t)


def render_collectives(rep, holdout: str) -> None:
    """The collective rows' table and the per-context summary."""
    from rich.table import Table

    from clustersim.units import format_bytes

    t = Table(title=f"profile {rep.profile}: predicted vs measured ({'held-out ' + holdout if holdout != 'none' else 'in-sample'} sizes)")
    for col in ("op", "ranks", "size", "measured us", "predicted us", "error %", "95% band us"):
        t.add_column(col, justify="right" if col not in ("op",) else "left")
    for r in rep.rows:
        err = r["error_pct"]
        style = "red" if abs(err) > 12 else ("yellow" if abs(err) > 5 else "")
        t.add_row(r["label"], str(r["ranks"]), format_bytes(r["size_bytes"]), f"{r['measured_us']:.2f}",
                  f"{r['predicted_us']:.2f}", f"[{style}]{err:+.2f}[/]" if style else f"{err:+.2f}",
                  f"{r['lo_us']:.2f} - {r['hi_us']:.2f}")
    console.print(t)
    s = Table(title="summary (mean |error|)")
    for col in ("context", "points", ">= 1 MiB mean %", ">= 1 MiB max %", "< 1 MiB mean %", "max %", "in band %"):
        s.add_column(col)

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    for row in rep.summary:
        s.add_row(row["label"], str(row["points"]), f(row["mean_abs_err_large_pct"]), f(row["max_abs_err_large_pct"]),
                  f(row["mean_abs_err_small_pct"]), f(row["max_abs_err_pct"]), f(row["in_band_pct"]))
    console.print(s)


def render_parameters(params: dict) -> None:
    """The link model's learned parameters (fit on every row) as two tables."""
    from rich.table import Table

    from clustersim.calibration.transfer_report import parameter_rows

    def table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
        t = Table(title=title)
        for col in columns:  # the name left, the numbers right
            t.add_column(col, justify="left" if col == columns[0] else "right")
        for row in rows:
            t.add_row(*row)
        console.print(t)

    links, ops = parameter_rows(params)
    table(f"link model fitted on every row (residual median {params['fit_residual_median_pct']:.1f}%): "
          "per link class and protocol",
          ("class.protocol", "efficiency of line rate", "us per step", "protocol base us"), links)
    tau = params.get("startup_us")
    table("per operation" + (f" (start-up time constant {tau:.0f} us)" if tau is not None else ""),
          ("op", "floor us", "op efficiency", "own chunk GB/s", "start-up depth"), ops)


def register(app: typer.Typer) -> None:
    """Attach fit/report commands to the calibrate sub-app."""
    app.command("fit")(fit_cmd)
    app.command("report")(report_cmd)
