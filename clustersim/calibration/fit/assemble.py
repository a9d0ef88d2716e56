"""A whole profile from measurements: every section fitted, merged into an optional base profile.

Owns :func:`fit_profile`, the one place that puts the pieces together: the
collective entries (:mod:`.collective`), the link classes they determine
(:mod:`.links`), the compute (:mod:`.compute`) and host (:mod:`.host`)
sections, and the ``source`` block saying what was measured where.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from clustersim.calibration.fit.collective import Switches, entry_key, fit_collectives
from clustersim.calibration.fit.compute import compute_section
from clustersim.calibration.fit.defaults import without_gap
from clustersim.calibration.fit.grouping import group_collectives
from clustersim.calibration.fit.host import host_section
from clustersim.calibration.fit.links import links_from
from clustersim.calibration.fit.measurements import Measurements
from clustersim.config.base import validate
from clustersim.config.profile import CollectiveEntry, ComputeParams, Profile, Source
from clustersim.errors import ClusterSimError


@dataclass
class FitResult:
    """What :func:`fit_profile` made: the profile and notes for the user."""

    profile: Profile
    notes: list[str] = field(default_factory=list)
    held_out: list[dict[str, Any]] = field(default_factory=list)


def _meta_of(meas: Measurements) -> dict[str, Any]:
    metas = meas.of("meta")
    merged: dict[str, Any] = {}
    for m in metas:  # later meta rows fill what earlier ones left out
        for k, v in m.items():
            if v is not None and k not in merged:
                merged[k] = v
    return merged


def _s(v: Any) -> str | None:
    return None if v is None else str(v)


def _source(meta: dict[str, Any], base: Profile | None, files: Sequence[str], *, holdout: str, ci: str) -> Source:
    """The ``source`` block: the meta row's machine and versions (the base's where the meta row is silent)."""
    old = base.source if base else Source()
    return Source(
        gpu=meta.get("gpu") or old.gpu,
        host=(", ".join(meta["hosts"]) if isinstance(meta.get("hosts"), list) else meta.get("host")) or old.host,
        driver=_s(meta.get("driver")) or old.driver, nccl_version=_s(meta.get("nccl_version")) or old.nccl_version,
        torch_version=_s(meta.get("torch_version")) or old.torch_version, date=_s(meta.get("date")) or old.date,
        nvls=meta.get("nvls") if meta.get("nvls") is not None else old.nvls, measured=True,
        files=list(dict.fromkeys([*old.files, *files])),
        notes=(f"fitted by clustersim calibrate fit (holdout={holdout}, ci={ci})"
               + (f"; extends profile {base.name!r}" if base else "")),
    )


def fit_profile(meas: Measurements, *, name: str, base: Profile | None = None, holdout: str = "none",
                peak_tflops: float | None = None, max_segments: int = 6, min_sizes: int = 3,
                files: Sequence[str] | None = None, ci: str = "t", seed: int = 0,
                switches: Switches | None = None, compute_from: dict[str, Any] | None = None) -> FitResult:
    """Fit everything the measurements determine into a :class:`Profile`.

    Parameters
    ----------
    meas:
        From :func:`read_measurements`.
    name:
        Profile name.
    base:
        Profile to extend: its entries are kept unless the new fit replaces them
        (same op, algorithm, protocol, ranks, scope, mode; same link class; each
        measured host/compute field).
    holdout:
        ``none``, ``odd`` or ``even``: sizes left out of every collective fit
        (see :func:`split_holdout`), for ``calibrate report``.
    peak_tflops:
        Dense peak of the GEMM dtype; default from the meta row's GPU name.
    ci, seed:
        Interval method (``t`` or ``bootstrap``, see :func:`fit_piecewise`) and
        the seed of the one ``numpy.random.Generator`` the bootstrap draws from.
    switches:
        ``switches(op, ranks, scope)``: sizes where NCCL's tuner changes protocol
        (see :func:`fit_piecewise`); None: the cheaper-line rule in every gap.
    compute_from:
        Without ``base``: the compute section to start from (:func:`.defaults.compute_base`, the shipped
        profile of the GPU measured); the rows replace what they measure.

    Whole back-to-back calls (nccl-tests rows timed without CUDA graphs, :func:`.defaults.whole_call`) are
    fitted less the profile's ``compute.kernel_launch_us``, which the simulator adds to every call.
    """
    if ci not in ("t", "bootstrap"):
        raise ClusterSimError(f"--ci must be t or bootstrap, got {ci!r}")
    rng = np.random.default_rng(seed)
    meta = _meta_of(meas)
    usable = [r for r in meas.rows if r["kind"] != "meta"]
    if not usable:
        raise ClusterSimError("no measurements found (no collective, gemm, hbm, launch, framework_call "
                              "or comm_init rows)" + (f"; {len(meas.skipped)} line(s) skipped" if meas.skipped else ""),
                              file=", ".join(meas.files) or None)
    data: dict[str, Any] = base.model_dump(mode="json") if base else {"name": name}
    if base is None and compute_from:
        data["compute"] = dict(compute_from)
    data["compute"] = compute_section(meas, data.get("compute", {}), meta=meta, peak_tflops=peak_tflops)
    # whole back-to-back calls carry the kernel gap the simulator adds to every call: fitted without it
    gap = float(data["compute"].get("kernel_launch_us", ComputeParams().kernel_launch_us))
    meas, n_whole = without_gap(meas, gap)
    groups = group_collectives(meas.rows)
    nvls_default = bool(meta.get("nvls")) if meta.get("nvls") is not None else (base.nvls if base else False)
    entries, held_out, notes = fit_collectives(groups, nvls=nvls_default, holdout=holdout, max_segments=max_segments,
                                               min_sizes=min_sizes, ci=ci, rng=rng, switches=switches)

    if n_whole:
        notes.append(f"{n_whole} nccl-tests rows (whole calls, no CUDA graphs) fitted less the {gap:.3g} us "
                     "kernel gap the simulator adds")
    data["name"] = name
    data["nvls"] = nvls_default
    # collectives: replace matching, keep the rest
    new_keys = {entry_key(e) for e in entries}
    kept = [c for c in data.get("collectives", []) if entry_key(CollectiveEntry.model_validate(c)) not in new_keys]
    data["collectives"] = kept + [e.model_dump(mode="json") for e in entries]
    links = dict(data.get("links", {}))
    for cls, lp in links_from(entries, meta).items():
        links[cls] = lp.model_dump(mode="json")
    data["links"] = links
    data["host"] = host_section(meas, data.get("host", {}), entries)
    data["source"] = _source(meta, base, files or meas.files, holdout=holdout, ci=ci).model_dump(mode="json")
    profile = validate(Profile, data, file=None)
    return FitResult(profile=profile, notes=notes, held_out=held_out)
