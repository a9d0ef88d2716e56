"""`clustersim calibrate fit` and `clustersim calibrate report`.

Thin layer: read the measurements, call :mod:`clustersim.calibration.fit` /
:mod:`clustersim.calibration.report`, render. User errors exit with status 2.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import console, err_console, fail, print_json
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
        None, "--topology", help="Topology the measurements were taken on (name or YAML): fitted link classes record "
        "its line rates, so their efficiency follows what-ifs on other topologies."),
) -> None:
    """Fit a calibration profile from measurements.

    Example: clustersim calibrate fit calibrate/raw/h200x2/*.jsonl -o calibrate/profiles/hgx-h200.yaml
    """
    from clustersim.calibration.fit import fit_profile, load_profile, read_measurements, write_profile

    try:
        if peak_tflops is not None and peak_tflops <= 0:
            raise ClusterSimError("--peak-tflops must be > 0")
        meas = read_measurements(measurements, warn=_warn)
        base_p = load_profile(base) if base else None
        prof_name = name or (base_p.name if base_p else output.stem)
        res = fit_profile(meas, name=prof_name, base=base_p, holdout=holdout, peak_tflops=peak_tflops,
                          max_segments=max_segments, min_sizes=min_sizes,
                          files=[str(p) for p in measurements], ci=ci, seed=seed)
        if topology is not None:
            from clustersim.topology import load_cluster

            cluster = load_cluster(topology)
            rates = {k: cluster.class_line_rate(k) for k in ("nvlink", "pcie", "network")}
            res.profile = res.profile.with_line_rates({k: v / 1e9 for k, v in rates.items() if v})
        write_profile(res.profile, output, command=_command_line(
            measurements, output, name=name, base=base, holdout=None if holdout == "none" else holdout,
            peak_tflops=peak_tflops, max_segments=None if max_segments == 6 else max_segments,
            min_sizes=None if min_sizes == 3 else min_sizes, ci=None if ci == "t" else ci,
            seed=None if ci == "t" else seed, topology=topology))
    except ClusterSimError as exc:
        fail(exc)
        return
    for cls, lp in res.profile.links.items():
        if not lp.scales:
            _warn(f"link class {cls}: an absolute bandwidth without the line rate it was measured on (give "
                  "--topology): what-ifs on that class will not move it")
    for note in res.notes:
        _warn(note)
    if json_out:
        print_json(res.profile.model_dump(mode="json"))
        return
    from rich.table import Table

    table = Table(title=f"profile {res.profile.name} -> {output}")
    for col in ("op", "ranks", "scope", "mode", "regime", "alpha us (95% CI)", "algbw GB/s (95% CI)", "points"):
        table.add_column(col)
    from clustersim.units import format_bytes

    new = {(e.op, e.ranks, e.scope, e.mode) for e in res.profile.collectives}
    for e in res.profile.collectives:
        if (e.op, e.ranks, e.scope, e.mode) not in new:
            continue
        for s in e.segments:
            rng = f"{format_bytes(s.size_min_bytes)} - {format_bytes(s.size_max_bytes) if s.size_max_bytes else 'inf'}"
            a_ci = f" [{s.alpha_ci_us[0]:.3g}, {s.alpha_ci_us[1]:.3g}]" if s.alpha_ci_us else ""
            b_ci = f" [{s.algbw_ci_GBps[0]:.4g}, {s.algbw_ci_GBps[1]:.4g}]" if s.algbw_ci_GBps else ""
            table.add_row(e.op, str(e.ranks), str(e.scope), e.mode, rng, f"{s.alpha_us:.3g}{a_ci}",
                          f"{s.algbw_GBps:.4g}{b_ci}", str(s.points))
    console.print(table)
    c = res.profile.compute
    console.print(f"links: {', '.join(f'{k}: {v.latency_us:.3g} us, {_link_bw(v)}' for k, v in res.profile.links.items()) or 'none'}")
    if meas.of("gemm"):
        console.print(f"GEMM: efficiency {c.gemm_efficiency} of peak (large), half at {c.gemm_half_flops:.3g} FLOPs, "
                      f"{len(c.gemm_table)} points")
    if meas.of("hbm") or meas.of("launch"):
        console.print(f"HBM {c.hbm_bandwidth_GBps} GB/s, kernel launch {c.kernel_launch_us} us")
    h = res.profile.host
    if meas.of("framework_call") or meas.of("comm_init") or any(e.mode == "framework" for e in res.profile.collectives):
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
    holdout: str = typer.Option("odd", "--holdout", help="Which sizes were held out of the fit: odd, even or none (in-sample)."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as one JSON document."),
    transfer: bool = typer.Option(False, "--transfer", help="Also run the link model's size check (fit every other "
                                  "size, predict the rest) and scale check (fit some rank counts, predict the others)."),
    fit_ranks: Optional[str] = typer.Option(None, "--fit-ranks", help="Scale check: rank counts to fit on, e.g. 8,16 "
                                            "(default: all but the largest)."),
    line_GBps: float = typer.Option(450.0, "--line-GBps", help="Transfer checks: one GPU's intra-node line rate, GB/s "
                                    "per direction (18 NVLink4 x 25 = 450)."),
    net_GBps: float = typer.Option(0.0, "--net-GBps", help="Transfer checks: one NIC's line rate, GB/s (400 Gb/s = 50)."),
    nics_per_node: int = typer.Option(0, "--nics-per-node", help="Transfer checks: NICs per node."),
) -> None:
    """Compare a fitted profile with held-out measurements (table, plots, Markdown).

    Example: clustersim calibrate report m.jsonl --profile p.yaml -o report/ --holdout odd
    """
    from clustersim.calibration.fit import load_profile, read_measurements
    from clustersim.calibration.report import evaluate, write_outputs

    try:
        meas = read_measurements(measurements, warn=_warn)
        prof = load_profile(profile)
        if not meas.of("collective"):
            raise ClusterSimError("no collective measurements in the given files"
                                  + (f" ({len(meas.skipped)} line(s) skipped)" if meas.skipped else ""))
        fitted = re.search(r"holdout=(\w+)", prof.source.notes or "")
        if fitted and fitted.group(1) != holdout and holdout != "none":
            _warn(f"the profile says it was fitted with {fitted.group(1)!r} held out, "
                  f"the report uses --holdout {holdout}: some 'held-out' points may have been fitted on")
        rep = evaluate(meas.rows, prof, holdout=holdout)
        written = write_outputs(rep, output) if output is not None else []
    except ClusterSimError as exc:
        fail(exc)
        return
    for m in rep.missing:
        _warn(f"no profile entry for {m}")
    checks = None
    if transfer:
        checks = _transfer(meas.rows, fit_ranks, output, intra_line_GBps=line_GBps, net_line_GBps=net_GBps,
                           nics_per_node=nics_per_node)
        if checks is None:
            return
    if json_out:
        print_json({**rep.to_dict(), **({"transfer": _strip_points(checks)} if checks else {})})
        return
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
    if written:
        console.print(f"wrote {len(written)} files to {output}")
    for name, c in (checks or {}).items():
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


def _strip_points(checks: dict) -> dict:
    return {k: (None if c is None else {kk: v for kk, v in c.items() if kk != "points"}) for k, c in checks.items()}


def _transfer(rows: list, fit_ranks: Optional[str], output: Optional[Path], **lines) -> Optional[dict]:
    """Run the transfer checks (and write their plots into ``output``); None after reporting a user error."""
    from clustersim.calibration.transfer_report import plot_transfer, transfer_checks

    try:
        ranks = [int(x) for x in fit_ranks.split(",")] if fit_ranks else None
    except ValueError:
        fail(ClusterSimError(f"--fit-ranks must be comma-separated integers, got {fit_ranks!r}", field="--fit-ranks"))
        return None
    try:
        checks = transfer_checks(rows, fit_ranks=ranks, **lines)
        if output is not None:
            plot_transfer(checks, output)
    except ClusterSimError as exc:
        fail(exc)
        return None
    return checks


def register(app: typer.Typer) -> None:
    """Attach fit/report commands to the calibrate sub-app."""
    app.command("fit")(fit_cmd)
    app.command("report")(report_cmd)
