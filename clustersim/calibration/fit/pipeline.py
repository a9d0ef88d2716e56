"""Measurement files in, a profile out: what ``clustersim calibrate fit`` does, as one call.

:func:`fit_files` reads the files (:func:`.read_measurements`), fits every section
(:func:`.fit_profile`), refuses a fit that learned nothing, records the line rates of the
topology the measurements were taken on and fits the link model there
(:func:`.link_model_section`), and writes the profile file. The topology reaches this side
branch as an object that reads its line rates when asked (:class:`FitTopology`, made by
:class:`clustersim.collectives.topology_lines.TopologyLines`): calibration never loads a cluster.
docs/python-api.md fits a profile from an nccl-tests log this way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence

from pydantic import ValidationError

from clustersim.calibration.fit.assemble import FitResult, _meta_of, fit_profile
from clustersim.calibration.fit.defaults import (
    TOPOLOGY_HINT, compute_base, fit_topology_name, needs_topology, without_gap,
)
from clustersim.calibration.fit.grouping import split_holdout
from clustersim.calibration.fit.link_section import link_model_section
from clustersim.calibration.fit.measurements import Measurements, read_measurements
from clustersim.calibration.fit.profile_file import load_profile, write_profile
from clustersim.config.profile import CollectiveEntry, LinkModelParams, Profile
from clustersim.errors import ClusterSimError


class FitTopology(Protocol):
    """What a fit reads of the topology its measurements were taken on.

    :class:`clustersim.collectives.topology_lines.TopologyLines` is the one the package makes;
    both methods are called only once the profile itself has been fitted.
    """

    #: the topology as the user named it (a shipped name or a file), for messages and the method text
    name: str

    def line_rates_GBps(self) -> dict[str, float]:
        """Per link class the node has (``nvlink``, ``pcie``, ``network``), its line rate in GB/s."""

    def communicator(self, max_gpus: int) -> tuple[Callable[[int], dict], int]:
        """``(lines, sm)`` of :func:`clustersim.collectives.model.communicator_lines` for up to ``max_gpus``."""


@dataclass
class FitRun:
    """What :func:`fit_files` made.

    Attributes
    ----------
    profile:
        The fitted profile (with the link model when a topology was given).
    measurements:
        The rows read (``skipped`` lists the lines that were not).
    new_entries:
        The collective entries this fit added to the base (all of them without a base).
    warnings:
        Messages for the user, in order: link classes whose bandwidth will not follow a what-if
        (no line rate), then the fit's own notes.
    output:
        The profile file written, or None.
    """

    profile: Profile
    measurements: Measurements
    new_entries: list[CollectiveEntry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    output: Path | None = None

    def to_dict(self) -> dict:
        """The fitted profile as JSON (what ``calibrate fit --json`` prints)."""
        return self.profile.model_dump(mode="json")


def _new_entries(profile: Profile, base: Profile | None) -> list[CollectiveEntry]:
    """The collective entries of ``profile`` that ``base`` does not hold already."""
    before = [e.model_dump(mode="json") for e in base.collectives] if base is not None else []
    return [e for e in profile.collectives if e.model_dump(mode="json") not in before]


def check_fitted(res: FitResult, meas: Measurements, base: Profile | None) -> None:
    """Refuse (no profile written) a fit that learned nothing from the measurements.

    Every collective context may be rejected (fewer than 2 sizes, all rows skipped as unreadable):
    a profile then would claim ``measured: true`` with nothing measured in it.

    Raises
    ------
    ClusterSimError
        Nothing new in the collectives and no compute or host rows.
    """
    other = [r for r in meas.rows if r["kind"] not in ("meta", "collective")]
    if not _new_entries(res.profile, base) and not other:
        why = "; ".join(res.notes) or "no collective context had enough sizes"
        skipped = f"; {len(meas.skipped)} line(s) skipped as unreadable" if meas.skipped else ""
        raise ClusterSimError(f"nothing could be fitted ({why}{skipped}); no profile written",
                              file=", ".join(meas.files) or None)


def fit_side(meas: Measurements, holdout: str) -> Measurements:
    """``meas`` without the collective sizes ``holdout`` leaves for ``calibrate report`` (per op, rank
    count, node count and mode, as the piecewise fit splits them)."""
    if holdout == "none":
        return meas
    groups: dict = {}
    for r in meas.rows:
        if r.get("kind") == "collective":
            groups.setdefault((r.get("op"), r.get("ranks"), r.get("nodes"), r.get("mode")), []).append(r)
    kept = [r for g in groups.values() for r in split_holdout(g, holdout)[0]]
    return Measurements(rows=[r for r in meas.rows if r.get("kind") != "collective"] + kept, files=meas.files)


def with_topology(profile: Profile, meas: Measurements, topology: FitTopology, *, holdout: str = "none",
                  command: str | None = None, update: Callable[[str], None] | None = None) -> Profile:
    """``profile`` with the line rates of ``topology`` recorded on its link classes and, when ``meas`` has
    NCCL-level collective rows, the link model fitted on them (sizes ``holdout`` leaves out excepted).

    The link model is NCCL's cost structure fitted jointly over every op, size and rank count at this
    topology's line rates: what the simulator uses for the rank counts and sizes not measured.
    ``update`` is told when the (slower) link-model fit starts.
    """
    try:
        profile = profile.with_line_rates(topology.line_rates_GBps())
    except ValidationError as exc:  # a fitted bandwidth above the topology's line rate: another machine
        gpus = sorted({str(r["gpu"]) for r in meas.rows if r.get("gpu")}) or ["an unnamed GPU"]
        reason = str(exc.errors()[0].get("msg", exc)).removeprefix("Value error, ")
        raise ClusterSimError(f"these rows were measured on {', '.join(gpus)}: {reason} of {topology.name}; give "
                              "the topology they were measured on", field="--topology") from None
    if not any(r.get("kind") == "collective" and r.get("mode", "nccl") == "nccl" for r in meas.rows):
        return profile
    # whole back-to-back calls less the kernel gap the simulator adds to every call (as the entries)
    meas, n_whole = without_gap(meas, profile.compute.kernel_launch_us)
    side = fit_side(meas, holdout)
    lines, sm = topology.communicator(max(int(r.get("ranks") or 2) for r in side.rows
                                          if r.get("kind") == "collective"))
    if update is not None:
        update("fitting the link model")
    note = (f"{n_whole} nccl-tests rows timed back to back without CUDA graphs were fitted less the "
            f"{profile.compute.kernel_launch_us:.3g} us kernel gap (compute.kernel_launch_us)") if n_whole else ""
    sec = link_model_section(side, topology.name, lines, sm, note=note, command=command or "")
    return profile.model_copy(update={"link_model": LinkModelParams.model_validate(sec)})


def fit_files(files: Sequence[str | Path], *, output: str | Path | None = None, name: str | None = None,
              base: str | Path | None = None, holdout: str = "none", peak_tflops: float | None = None,
              max_segments: int = 6, min_sizes: int = 3, ci: str = "t", seed: int = 0,
              topology: FitTopology | str | None = None,
              open_topology: Callable[[str], FitTopology] | None = None, command: str | None = None,
              warn: Callable[[str], None] | None = None, update: Callable[[str], None] | None = None) -> FitRun:
    """Fit a calibration profile from measurement files and write it to ``output``.

    Parameters
    ----------
    files:
        JSON-lines files (Contract 3) and nccl-tests logs.
    output:
        Profile YAML to write; None: write nothing.
    name:
        Profile name; default the base's name, else ``output``'s stem.
    base:
        Profile (file or shipped name) to extend: its other entries are kept.
    holdout, peak_tflops, max_segments, min_sizes, ci, seed:
        As :func:`.fit_profile` takes them.
    topology:
        The topology the measurements were taken on (a :class:`FitTopology`, or its name for
        ``open_topology``): the link classes record its line rates, and NCCL-level collective rows also
        give the link model. None: the meta row's ``topology``, else the shipped topology of ``base``
        (:func:`.defaults.fit_topology_name`); NCCL-level rows with none of them are refused.
    open_topology:
        Makes a :class:`FitTopology` of a topology name (the CLI passes
        :class:`clustersim.collectives.topology_lines.TopologyLines`); needed unless ``topology`` is one.
    command:
        What made the profile, for its header and the link model's method text.
    warn:
        Told every line of the files that is skipped as unreadable.
    update:
        Told when a slower stage starts (for a progress display).

    Raises
    ------
    ClusterSimError
        Bad options, unreadable files, measurements from which nothing could be fitted, NCCL-level
        collective rows without a topology, or (without ``base``) no compute model for the GPU measured.

    Without ``base`` the compute section starts from the shipped profile of the GPU measured
    (:func:`.defaults.compute_base`): a collectives-only log keeps that GPU's measured compute tables.
    """
    if peak_tflops is not None and peak_tflops <= 0:
        raise ClusterSimError("--peak-tflops must be > 0")
    if not 0 <= seed < 2**32:
        raise ClusterSimError(f"must be in 0..4,294,967,295 (a 32-bit seed of numpy's generator), got {seed:,}",
                              field="--seed")
    meas = read_measurements(files, warn=warn, refuse_mostly_bad=True)
    base_p = load_profile(base) if base else None
    meta = _meta_of(meas)
    topo_name, said = fit_topology_name(topology if isinstance(topology, (str, Path)) else
                                        getattr(topology, "name", None), meta, base_p)
    if topo_name is not None and not hasattr(topology, "line_rates_GBps"):
        if open_topology is None:
            raise ClusterSimError(f"topology {topo_name!r} given by name without open_topology", field="topology")
        topology = open_topology(topo_name)
    compute_from, compute_note = (compute_base(meta, topo_name, has_compute_rows=any(
        r["kind"] in ("gemm", "hbm", "launch", "kernel") for r in meas.rows)) if base_p is None else (None, ""))
    prof_name = name or (base_p.name if base_p else Path(output).stem if output is not None else None)
    if prof_name is None:
        raise ClusterSimError("name the profile (name=...) or give the output file it is written to", field="name")
    res = fit_profile(meas, name=prof_name, base=base_p, holdout=holdout, peak_tflops=peak_tflops,
                      max_segments=max_segments, min_sizes=min_sizes, files=[str(p) for p in files], ci=ci, seed=seed,
                      compute_from=compute_from)
    check_fitted(res, meas, base_p)
    if topo_name is None and needs_topology(meas):
        raise ClusterSimError("NCCL-level collective rows are fitted as the link model at the line rates of the "
                              f"topology they were measured on, and nothing says which: {TOPOLOGY_HINT}",
                              field="--topology", file=", ".join(meas.files) or None)
    profile = res.profile
    if topology is not None:
        profile = with_topology(profile, meas, topology, holdout=holdout, command=command, update=update)
    written = write_profile(profile, output, command=command) if output is not None else None
    warnings = [f"link class {cls}: an absolute bandwidth without the line rate it was measured on (give "
                "--topology): what-ifs on that class will not move it"
                for cls, lp in profile.links.items() if not lp.scales]
    told = [f"topology {topo_name} (from {said})"] if said and said != "--topology" else []
    told += [f"{compute_note} (no --base; compute rows replace what they measure)"] if compute_note else []
    return FitRun(profile=profile, measurements=meas, new_entries=_new_entries(profile, base_p),
                  warnings=warnings + told + list(res.notes), output=written)
