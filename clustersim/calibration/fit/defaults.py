"""What a fit takes when the user does not say it: the topology measured on, the compute model, the kernel gap.

Owns three rules of ``calibrate fit`` (issue 36), so that the first command a user types gives the model
that transfers to other sizes and rank counts:

* **Topology** (:func:`fit_topology_name`): NCCL-level collective rows are fitted as the link model at the
  line rates of the topology they were measured on. It comes from ``--topology``, else the meta row's
  ``topology``, else the shipped topology whose ``default_profile`` is the base profile; with none of them
  the fit refuses (exit 2 naming ``--topology``) rather than write per-rank-count lookup entries only,
  which were 33-36% off at >= 1 MiB when 8 + 16 A100 GPUs predicted 32-128.
* **Compute** (:func:`compute_base`): a fit without ``--base`` starts its compute section from the shipped
  profile of the GPU measured (the topology's default profile when it describes that GPU, else the shipped
  profile whose ``source.gpu`` names it), so a collectives-only log does not silently replace the
  measured compute tables by the bare roofline defaults (a 2x H200 nccl-tests fit gave ``gpt-1b-ddp``
  91.1 ms instead of 121.3). No such profile and no compute rows: refused with the reason.
* **Whole calls** (:func:`whole_call`, :func:`without_gap`): an nccl-tests row timed without CUDA graphs is
  one call in a back-to-back stream, the NCCL-level time plus one GPU-side kernel gap; the simulator adds
  ``compute.kernel_launch_us`` to every call, so the fit takes it off those rows first (on the 2x H200 log,
  counting it twice was +33% at 1 KiB in-sample).

>>> whole_call({"kind": "collective", "source": "nccl-tests", "run_id": "a"}, {"a": {"cuda_graph": 0}})
True
>>> whole_call({"kind": "collective", "source": "bench", "run_id": "b"}, {})
False
"""

from __future__ import annotations

from typing import Any

from clustersim.calibration.fit.compute import gpu_spec_for
from clustersim.calibration.fit.measurements import Measurements
from clustersim.config.profile import Profile
from clustersim.errors import ClusterSimError

__all__ = ["compute_base", "fit_topology_name", "needs_topology", "whole_call", "without_gap"]

#: what the refusal says the user can do
TOPOLOGY_HINT = ("give --topology (the shipped name or YAML of the machine measured; `clustersim topo list`), "
                 "a meta row with \"topology\", or --base a shipped profile")


def needs_topology(meas: Measurements) -> bool:
    """Whether ``meas`` holds NCCL-level collective rows (what the link model is fitted on): ``mode: nccl`` rows
    of a run whose meta row does not name another backend (a CPU bench over gloo has no NCCL links to learn)."""
    metas = _metas(meas)
    return any(r["kind"] == "collective" and r.get("mode", "nccl") == "nccl"
               and (metas.get(str(r.get("run_id"))) or {}).get("backend", "nccl") == "nccl" for r in meas.rows)


def _topology_of_profile(name: str) -> str | None:
    """The shipped topology whose ``default_profile`` is ``name`` (the first by name), or None."""
    from clustersim.config.base import shipped_dir, shipped_names
    from clustersim.config.topology import load_topology_spec

    for topo in shipped_names("topology"):
        try:
            spec = load_topology_spec(shipped_dir("topology") / f"{topo}.yaml")
        except ClusterSimError:
            continue
        if spec.default_profile == name:
            return topo
    return None


def fit_topology_name(explicit: str | None, meta: dict[str, Any], base: Profile | None) -> tuple[str | None, str]:
    """``(topology, where)``: the topology the measurements were taken on and what said it.

    ``--topology`` first, then the meta row's ``topology``, then the shipped topology whose default profile
    is ``base``; ``(None, "")`` when none says it.

    >>> fit_topology_name(None, {"topology": "dgx-h100"}, None)
    ('dgx-h100', 'the meta row')
    >>> fit_topology_name(None, {}, Profile(name="hgx-h200"))
    ('hgx-h200', "the base profile's topology")
    """
    if explicit:
        return str(explicit), "--topology"
    if meta.get("topology"):
        return str(meta["topology"]), "the meta row"
    if base is not None:
        topo = _topology_of_profile(base.name)
        if topo is not None:
            return topo, "the base profile's topology"
    return None, ""


def _gpu_key(name: str) -> str:
    """A GPU name as nvidia-smi, torch and nccl-tests headers spell it, without the vendor: 'A100-SXM4-40GB'."""
    key = name.strip().upper()
    return key[len("NVIDIA "):] if key.startswith("NVIDIA ") else key


def _same_gpu(a: str | None, b: str | None) -> bool:
    """Whether two GPU names are one GPU: the same name without the vendor, else one catalogue entry (whose
    peak they share) when neither name is more specific than the other.

    >>> _same_gpu("NVIDIA H200", "H200"), _same_gpu("A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB")
    (True, False)
    """
    if not a or not b:
        return False
    ka, kb = _gpu_key(a), _gpu_key(b)
    if ka == kb:
        return True
    if ka in kb or kb in ka:
        sa, sb = gpu_spec_for(a), gpu_spec_for(b)
        return sa is not None and sb is not None and sa.name == sb.name
    return False


def compute_base(meta: dict[str, Any], topology: str | None, *, has_compute_rows: bool) -> tuple[dict, str]:
    """``(compute, note)``: the compute section a fit without ``--base`` starts from, and a note saying whose.

    The topology's default profile when its GPU is the one measured (or the rows name none), else the
    shipped profile whose ``source.gpu`` is that GPU (a measured one first). ``({}, note)`` when only the
    rows themselves give the compute model (compute rows and no shipped profile of that GPU).

    Raises
    ------
    ClusterSimError
        No shipped profile of the GPU measured and no compute rows: the profile would carry the bare
        defaults, which describe no GPU.
    """
    from clustersim.calibration.fit.profile_file import load_profile
    from clustersim.config.base import resolve_file, shipped_dir, shipped_names
    from clustersim.config.topology import load_topology_spec

    gpu = meta.get("gpu")

    def fits(prof: Profile) -> bool:
        return not (gpu and prof.source.gpu and not _same_gpu(prof.source.gpu, gpu))

    if topology is not None:
        try:
            spec = load_topology_spec(resolve_file(topology, "topology"))
            prof = load_profile(spec.default_profile) if spec.default_profile else None
        except ClusterSimError:
            prof = None
        if prof is not None and fits(prof):
            return prof.compute.model_dump(mode="json"), f"compute model of the shipped {prof.name}"
    if gpu:
        shipped = [load_profile(shipped_dir("profile") / f"{n}.yaml") for n in shipped_names("profile")]
        for prof in sorted(shipped, key=lambda p: not p.source.measured):
            if _same_gpu(prof.source.gpu, gpu):
                return prof.compute.model_dump(mode="json"), f"compute model of the shipped {prof.name}"
    if has_compute_rows:
        return {}, ""
    raise ClusterSimError(f"no shipped profile describes the GPU measured ({gpu or 'the rows name none'}) and the "
                          "measurements hold no compute rows: the profile would carry a compute model of no GPU; "
                          "give --base PROFILE (its compute model is kept) or measure compute (calibrate bench)",
                          field="--base")


def _metas(meas: Measurements) -> dict[str, dict[str, Any]]:
    return {str(m.get("run_id")): m for m in meas.of("meta") if m.get("run_id") is not None}


def whole_call(row: dict[str, Any], metas: dict[str, dict[str, Any]]) -> bool:
    """Whether a collective row's time is a whole back-to-back call (kernel gap included): an nccl-tests row
    whose run was not timed as CUDA-graph replays (``graph: 0`` in its header, or a format without graphs)."""
    if row.get("kind") != "collective" or row.get("source") != "nccl-tests" or row.get("mode", "nccl") != "nccl":
        return False
    return not (metas.get(str(row.get("run_id"))) or {}).get("cuda_graph")


def without_gap(meas: Measurements, gap_us: float) -> tuple[Measurements, int]:
    """``(meas', n)``: ``meas`` with ``gap_us`` taken off the time of its ``n`` whole-call rows
    (:func:`whole_call`), so that the simulator, which adds the gap to every call, gives back the measured
    time. A row is never taken below half its time (a gap that large is not the row's)."""
    metas = _metas(meas)
    rows, n = [], 0
    for r in meas.rows:
        if gap_us > 0 and whole_call(r, metas):
            t = float(r["time_us"])
            r = {**r, "time_us": max(t - gap_us, 0.5 * t)}
            n += 1
        rows.append(r)
    return Measurements(rows=rows, files=meas.files, skipped=meas.skipped), n
