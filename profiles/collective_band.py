"""Held-out error of the shipped collective model: the factor behind ``clustersim run --band``.

A band is honest only when it is measured on calls the model did not see. Two such sets exist
in ``validation`` and ``tests/data``, one for each way a shipped profile is made:

* **measured** (``hgx-h200``: collective entries and the link model fitted from the bench): the
  profile is fitted again from the 2-rank H200 bench alone (the same recipe as
  :func:`make_profiles.make_h200`, link model included) and predicts every call of the 4-rank bench, all six operations, 1 KiB-4 GiB: the error of a
  calibrated profile at a rank count it was not measured at.
* **published** (every other profile: NCCL-model link classes, no collective measured): the
  published link classes of the shipped ``dgx-a100`` profile on ``dgx-a100`` (one node) / ``dgx-a100-superpod`` predict the
  real nccl-tests all_reduce logs of Azure NDv4 A100 nodes (8 A100 on NVLink3, 8 x HDR 200 Gb/s:
  the same link classes and line rates), 8, 16 and 32 GPUs.
* **A100 link model** (``azure-ndv4``: the link model fitted on the 8- and 16-GPU logs of that set):
  the shipped profile, link model included, predicts the 32-GPU log (four nodes), which the fit
  never saw: the error of the fitted link model at a scale it was not measured at.

The factor is the 95% quantile of ``|log(predicted / measured)|`` over the held-out points;
:func:`make_profiles.main` writes it into each profile's ``uncertainty`` section. Run this file
to see the numbers and how well a factor learned on part of the points covers the rest::

    python profiles/collective_band.py
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from recipe_base import (A100_COLLECTIVES, A100_HELD_OUT_LOG, BASE_H200, H200_COLLECTIVES,  # noqa: E402
                         LINKS_PUBLISHED, link_model_section, nccl_switches, path, read, reading_for)

COVERAGE = 0.95
#: the A100 all_reduce logs per GPU count: 8 and 16 (fitted into azure-ndv4's link model) and the held-out 32
A100_LOGS = {8: A100_COLLECTIVES[0], 16: A100_COLLECTIVES[1], 32: A100_HELD_OUT_LOG}
H200_FIT, H200_HELD = H200_COLLECTIVES     # fitted on the 2-rank bench, checked on the 4-rank bench


def _plain_rows(rel: str) -> list[dict]:
    """NCCL-level collective rows (auto algorithm and protocol, no NVLS) of one file (repository-relative)."""
    from clustersim.calibration.fit import read_measurements

    rows = read_measurements([str(path(rel))]).rows
    return [r for r in rows if r["kind"] == "collective" and r.get("mode", "nccl") == "nccl"
            and not r.get("nvls") and r.get("algorithm") is None and r.get("protocol") is None]


def _log_errors(model, rows: list[dict], ranks: int) -> np.ndarray:
    pred = np.array([model.estimate(r["op"], ranks, r["size_bytes"]).time_s * 1e6 for r in rows])
    return np.log(pred / np.array([r["time_us"] for r in rows]))


def factor(log_errors: np.ndarray, coverage: float = COVERAGE) -> float:
    """The band factor f: ``coverage`` quantile of ``|log error|``, as ``exp``.

    >>> round(factor(np.log([1.1, 1 / 1.2, 1.05, 1.0])), 3)
    1.184
    """
    return float(np.exp(np.quantile(np.abs(log_errors), coverage)))


def _a100_cluster(n: int):
    from clustersim.topology import load_cluster

    return load_cluster("dgx-a100") if n == 8 else load_cluster("dgx-a100-superpod", nodes=n // 8)


def published_errors() -> dict[int, np.ndarray]:
    """Log errors of the published link classes of ``dgx-a100`` (without its fitted ``link_model``,
    which the other published profiles do not have) on the A100 all_reduce logs, per GPU count."""
    from clustersim.collectives import CollectiveModel, load_profile_for

    out = {}
    for n, path in A100_LOGS.items():
        cluster = _a100_cluster(n)
        prof = load_profile_for(cluster, "dgx-a100").model_copy(update={"link_model": None})
        out[n] = _log_errors(CollectiveModel(cluster, prof), _plain_rows(path), n)
    return out


#: the A100 log the azure-ndv4 link model was not fitted on (recipe_base.A100_COLLECTIVES: 8 and 16 GPUs)
A100_HELD_OUT = 32


def a100_link_errors(profile=None) -> np.ndarray:
    """Log errors of the ``azure-ndv4`` profile (its link model fitted on 8 and 16 GPUs of that machine)
    on the held-out 32-GPU log; ``profile``: the one being written (default: the shipped file)."""
    from clustersim.collectives import CollectiveModel, load_profile_for
    from clustersim.topology import load_cluster

    cluster = load_cluster("azure-ndv4", gpus=A100_HELD_OUT)
    model = CollectiveModel(cluster, profile if profile is not None else load_profile_for(cluster, "azure-ndv4"))
    return _log_errors(model, _plain_rows(A100_LOGS[A100_HELD_OUT]), A100_HELD_OUT)


def measured_errors() -> dict[str, np.ndarray]:
    """Log errors, per operation, of an ``hgx-h200`` profile fitted on 2 ranks predicting 4 ranks."""
    from clustersim.calibration.fit import fit_profile
    from clustersim.collectives import CollectiveModel
    from clustersim.config.base import validate
    from clustersim.config.profile import Profile
    from clustersim.topology import load_cluster

    meas = read(H200_FIT)
    base = validate(Profile, copy.deepcopy(BASE_H200), file=None)
    prof = fit_profile(meas, name="hgx-h200", base=base, files=meas.files,
                       switches=nccl_switches("hgx-h200", base)).profile
    data = prof.model_dump(mode="json")
    data["links"], data["nvls"] = copy.deepcopy(LINKS_PUBLISHED), False   # as make_profiles.make_h200 does
    data["link_model"] = link_model_section(meas)                          # fitted on 2 ranks only
    model = CollectiveModel(load_cluster("hgx-h200", gpus=4), validate(Profile, data, file=None))
    held = _plain_rows(H200_HELD)
    err = _log_errors(model, held, 4)
    return {op: err[[r["op"] == op for r in held]] for op in sorted({r["op"] for r in held})}


def uncertainty_sections(a100_profile=None) -> dict[str, dict]:
    """The ``uncertainty`` section for measured and for published profiles, and for ``azure-ndv4``'s link
    model (``a100_profile``: the profile being written; default: the shipped file)."""
    with reading_for("band:measured"):
        meas = np.concatenate(list(measured_errors().values()))
    with reading_for("band:published"):
        pub = np.concatenate(list(published_errors().values()))
    with reading_for("band:a100-link-model"):
        a100 = a100_link_errors(a100_profile)
    return {
        "measured": {"time_factor": round(factor(meas), 3), "coverage": COVERAGE, "held_out_points": int(meas.size),
                     "method": "hgx-h200 profile fitted again from the 2-rank H200 bench alone, predicting every "
                               "call of the 4-rank bench (six ops, 1 KiB-4 GiB): 95% quantile of "
                               "|log(predicted/measured)|. Written by `python profiles/make_profiles.py` "
                               "(profiles/collective_band.py)."},
        "measured-2-ranks": {
            "time_factor": round(factor(pub), 3), "coverage": COVERAGE, "held_out_points": int(pub.size),
            "method": "Collectives measured on 2 GPUs of one host only (entries and link_model); across nodes, "
                      "where this profile is mostly used, the published NCCL-model link classes answer, so the band "
                      "is theirs: their error on real nccl-tests all_reduce logs of A100 nodes (dgx-a100 profile, "
                      "8/16/32 GPUs, 8 x HDR per node): 95% quantile of |log(predicted/measured)|. Written by "
                      "`python profiles/make_profiles.py` (profiles/collective_band.py)."},
        "published": {"time_factor": round(factor(pub), 3), "coverage": COVERAGE, "held_out_points": int(pub.size),
                      "method": "No collective of this hardware measured: the error of the published NCCL-model "
                                "link classes on real nccl-tests all_reduce logs of A100 nodes (dgx-a100 profile, "
                                "8/16/32 GPUs, 8 x HDR per node): 95% quantile of |log(predicted/measured)|. "
                                "Written by `python profiles/make_profiles.py` (profiles/collective_band.py)."},
        "a100-link-model": {
            "time_factor": round(factor(a100), 3), "coverage": COVERAGE, "held_out_points": int(a100.size),
            "method": "Link model fitted on the Azure NDv4 A100 all_reduce logs at 8 and 16 GPUs (link_model): "
                      "this profile on the azure-ndv4 preset (4 nodes) predicting the held-out 32-GPU log of the set "
                      "(four nodes, 1 KiB-4 GiB): 95% quantile of |log(predicted/measured)|. Written by "
                      "`python profiles/make_profiles.py` (profiles/collective_band.py)."},
    }


def main() -> int:
    meas, pub = measured_errors(), published_errors()
    print("held-out collective error of the shipped model (95% quantile of |log(pred/meas)| as a factor)")
    print(f"{'set':<34}{'points':>7}{'factor':>8}{'median':>8}{'bias':>8}")
    for name, err in [*((f"H200 2->4 ranks, {op}", e) for op, e in meas.items()),
                      ("H200 2->4 ranks, all ops", np.concatenate(list(meas.values()))),
                      *((f"A100 published, {n} GPUs", e) for n, e in pub.items()),
                      ("A100 published, all", np.concatenate(list(pub.values()))),
                      ("A100 link model 8+16 -> 32 GPUs", a100_link_errors())]:
        print(f"{name:<34}{err.size:>7}{factor(err):>8.3f}{np.exp(np.median(np.abs(err))):>8.3f}"
              f"{np.exp(err.mean()):>8.3f}")
    # out of sample: a factor learned on some points, the share of the others inside it
    print("\ncoverage of a factor learned on one part, on the other part")
    ops = list(meas)
    first = np.concatenate([meas[o] for o in ops[::2]])
    second = np.concatenate([meas[o] for o in ops[1::2]])
    for name, learn, check in [("H200: ops " + "/".join(ops[::2]) + " -> the others", first, second),
                               ("H200: the others -> ops " + "/".join(ops[::2]), second, first),
                               ("A100: 8+16 GPUs -> 32", np.concatenate([pub[8], pub[16]]), pub[32]),
                               ("A100: 16+32 GPUs -> 8", np.concatenate([pub[16], pub[32]]), pub[8])]:
        f = factor(learn)
        print(f"{name:<60} f {f:6.3f}  covers {100 * np.mean(np.abs(check) <= np.log(f)):5.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
