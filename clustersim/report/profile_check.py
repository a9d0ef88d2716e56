"""A fitted profile against held-out measurements: what ``clustersim calibrate report`` assembles.

:func:`check_profile` puts the sections together: the collective rows at their held-out sizes
(:func:`clustersim.calibration.report.evaluate`), the kernel rows against the profile's compute
tables (:func:`clustersim.simulate.kernel_check.kernel_report`, which prices them with the
simulator's own compute model), the files (PNG plots, ``summary.md``, ``report.json``), and on
request the link model's transfer checks and learned parameters
(:mod:`clustersim.calibration.transfer_report`). It lives above ``simulate`` because the kernel
check does; calibration alone never runs the simulator's compute model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from clustersim.calibration.fit import load_profile, read_measurements
from clustersim.calibration.report import Report, evaluate, write_outputs
from clustersim.calibration.transfer_report import link_parameters, plot_transfer, transfer_checks
from clustersim.errors import ClusterSimError
from clustersim.simulate.kernel_check import KernelReport, kernel_report, markdown_lines


@dataclass
class ProfileCheck:
    """What :func:`check_profile` found.

    Attributes
    ----------
    report:
        The collective rows and per-context summary (the kernel classes in its ``extra``).
    kernels:
        The kernel classes' comparison, or None without kernel rows.
    holdout:
        The sizes treated as held out (``auto`` resolved).
    written:
        The files written into the output folder.
    checks, params:
        With ``transfer``: the size and scale checks (name -> check, None where it could not
        run) and the link model's parameters fitted on every row; else None.
    """

    report: Report
    kernels: KernelReport | None = None
    holdout: str = "none"
    written: list[Path] = field(default_factory=list)
    checks: dict[str, Any] | None = None
    params: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``calibrate report --json`` document (the checks without their plotted points)."""
        extra = {"transfer": strip_points(self.checks), "link_model": self.params} if self.checks else {}
        return {**self.report.to_dict(), **extra}


def strip_points(checks: dict[str, Any]) -> dict[str, Any]:
    """The transfer checks without the per-point data only their plots need."""
    return {k: (None if c is None else {kk: v for kk, v in c.items() if kk != "points"}) for k, c in checks.items()}


def resolve_holdout(holdout: str, notes: str | None) -> tuple[str, str | None]:
    """``(holdout used, holdout the profile says it was fitted with)``; ``auto`` takes the profile's.

    >>> resolve_holdout("auto", "fitted by clustersim calibrate fit (holdout=odd, ci=t)")
    ('odd', 'odd')
    >>> resolve_holdout("auto", None)
    ('none', None)
    """
    fitted = re.search(r"holdout=(\w+)", notes or "")
    if holdout == "auto":  # the same split `calibrate fit` used (its default: none, in-sample)
        holdout = fitted.group(1) if fitted else "none"
    return holdout, fitted.group(1) if fitted else None


def parse_ranks(fit_ranks: str | Sequence[int] | None) -> list[int] | None:
    """``"8,16"`` (or a list) as rank counts; None stays None."""
    if not fit_ranks:
        return None
    if not isinstance(fit_ranks, str):
        return [int(x) for x in fit_ranks]
    try:
        return [int(x) for x in fit_ranks.split(",")]
    except ValueError:
        raise ClusterSimError(f"--fit-ranks must be comma-separated integers, got {fit_ranks!r}",
                              field="--fit-ranks") from None


def check_profile(files: Sequence[str | Path], profile: str | Path, *, holdout: str = "auto",
                  output: str | Path | None = None, transfer: bool = False,
                  fit_ranks: str | Sequence[int] | None = None, line_GBps: float = 450.0, net_GBps: float = 0.0,
                  nics_per_node: int = 0, sm: int = 90, warn: Callable[[str], None] | None = None,
                  update: Callable[[str], None] | None = None) -> ProfileCheck:
    """Compare a fitted profile with measurements (collective rows at held-out sizes, kernel rows per class).

    Parameters
    ----------
    files:
        JSON-lines files (Contract 3) and nccl-tests logs with the held-out measurements.
    profile:
        The fitted profile (file or shipped name).
    holdout:
        ``odd``, ``even``, ``none`` (in-sample) or ``auto`` (what the profile says it was fitted with;
        none when it says nothing).
    output:
        Folder for PNG plots, ``summary.md`` and ``report.json`` (and the transfer plots); None: no files.
    transfer:
        Also run the link model's size check (fit every other size, predict the rest) and scale check
        (fit the rank counts ``fit_ranks``, default all but the largest, predict the others), and fit
        its parameters on every row, at the line rates ``line_GBps`` (one GPU's intra-node, GB/s per
        direction), ``net_GBps`` (one NIC) with ``nics_per_node``, for compute capability ``sm`` x 10.
    warn:
        Told what the user should know as soon as it is known: skipped lines, a hold-out other than the
        fit's, kernel rows measured on another GPU, contexts the profile has no entry for.
    update:
        Told when a stage starts (for a progress display).

    Raises
    ------
    ClusterSimError
        Unreadable files or profile, no collective or kernel rows, bad ``fit_ranks``, transfer checks
        that cannot run on the rows.
    """
    meas = read_measurements(files, warn=warn, refuse_mostly_bad=True)
    prof = load_profile(profile)
    has_kernels = any(r.get("kind") == "kernel" for r in meas.rows)
    if not meas.of("collective") and not has_kernels:
        raise ClusterSimError("no collective or kernel measurements in the given files"
                              + (f" ({len(meas.skipped)} line(s) skipped)" if meas.skipped else ""))
    holdout, fitted = resolve_holdout(holdout, prof.source.notes)
    if fitted and fitted != holdout and holdout != "none" and meas.of("collective") and warn is not None:
        warn(f"the profile says it was fitted with {fitted!r} held out, "
             f"the report uses --holdout {holdout}: some 'held-out' points may have been fitted on")
    if meas.of("collective"):
        rep = evaluate(meas.rows, prof, holdout=holdout)
    else:
        rep = Report(holdout=holdout, profile=prof.name)
    krep = kernel_report(meas.rows, prof) if has_kernels else None
    if krep is not None:
        rep.extra["kernels"] = krep.to_dict()
        rep.extra_md = markdown_lines(krep)
    if update is not None:
        update(f"writing plots to {output}")
    out = ProfileCheck(report=rep, kernels=krep, holdout=holdout,
                       written=write_outputs(rep, output) if output is not None else [])
    if warn is not None:
        if krep is not None and krep.measured_on and krep.gpu and krep.gpu not in krep.measured_on:
            warn(f"the kernel rows were measured on {', '.join(krep.measured_on)}, the profile describes {krep.gpu}")
        for m in rep.missing:
            warn(f"no profile entry for {m}")
    if transfer:
        lines = dict(intra_line_GBps=line_GBps, net_line_GBps=net_GBps, nics_per_node=nics_per_node, sm=sm)
        ranks = parse_ranks(fit_ranks)
        out.checks = transfer_checks(meas.rows, fit_ranks=ranks, **lines)
        out.params = link_parameters(meas.rows, **lines)
        if output is not None:
            plot_transfer(out.checks, output)
    return out
