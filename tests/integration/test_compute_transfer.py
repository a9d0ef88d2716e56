"""The compute transfer (clustersim/calibration/transfer.py) tested across the two measured Hopper parts.

H200 and H100 both have measured kernel tables. Each GPU-bound real row of
``validation/gpu-bound-set_h200-h100_2026-11-25/`` (the set of test_real_gpu_validation.py) is
predicted with its topology's default profile whose ``compute`` section is replaced by the *other*
GPU's measured one transferred by :func:`transfer_compute` (H200 rows: H100 tables -> H200; H100
rows: H200 tables -> H100). The profiles are built here, in a temporary folder, never shipped. Each
row within 10% of its measured step time: the test of the method that the A100 and GB200 profiles
rely on (docs/validation.md, "Uncalibrated GPU").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checks import assert_close
import yaml

from clustersim.calibration.transfer import transfer_compute, transfer_point, wave_efficiency
from clustersim.config.base import load_model, validate
from clustersim.config.profile import Profile
from clustersim.config.scenario import Scenario
from clustersim.config.topology import gpu_spec
from clustersim.simulate.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"
#: the GPU-bound reference set (validation/gpu-bound-set_h200-h100_2026-11-25: its expect.yaml names the row files)
GPU_BOUND = ROOT / "validation" / "gpu-bound-set_h200-h100_2026-11-25"
ROWS = [json.loads(line) for rel in yaml.safe_load((GPU_BOUND / "expect.yaml").read_text())["check"]["measurements"]
        for line in (ROOT / rel).read_text().splitlines() if line.strip()]
ROWS = [r for r in ROWS if r.get("kind") == "train_step" and r.get("status") == "ok"]
TOL = 0.10
# measured profile -> (its GPU, the profile whose tables are transferred to it, that profile's GPU)
THROUGH = {"hgx-h200": ("H200-SXM", "dgx-h100", "H100-SXM"), "dgx-h100": ("H100-SXM", "hgx-h200", "H200-SXM")}


def _load(name: str) -> dict:
    return yaml.safe_load((PROFILES / f"{name}.yaml").read_text())


@pytest.fixture(scope="module")
def through(tmp_path_factory) -> dict[str, Path]:
    """Per target profile name: a profile file whose compute section came from the other Hopper part."""
    out = {}
    folder = tmp_path_factory.mktemp("transfer")
    for name, (gpu, src_name, src_gpu) in THROUGH.items():
        data = _load(name)
        data["compute"] = transfer_compute(_load(src_name)["compute"], source=gpu_spec(src_gpu), target=gpu_spec(gpu))
        validate(Profile, data, file=name)
        path = folder / f"{name}-through-{src_name}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        out[name] = path
    return out


def _profile_of(row) -> str:
    return "dgx-h100" if any(o == "cluster.topology=dgx-h100" for o in row["overrides"]) else "hgx-h200"


def test_both_gpus_are_in_the_set():
    assert {_profile_of(r) for r in ROWS} == {"hgx-h200", "dgx-h100"}
    assert len(ROWS) >= 30


@pytest.mark.parametrize("row", ROWS, ids=[r["run_id"] for r in ROWS])
def test_step_time_through_the_other_hopper_within_10_percent(row, through):
    overrides = list(row["overrides"]) + [f"cluster.profile={through[_profile_of(row)]}"]
    sc = load_model(Scenario, ROOT / "scenarios" / f"{row['scenario']}.yaml", overrides)
    t = run_scenario(sc, fidelity="analytical").step_time_s
    src = THROUGH[_profile_of(row)][1]
    assert_close(t, float(row["step_time_s"]), rel=TOL, what=f"row {row['run_id']} through {src}'s tables", unit="s",
                 names=("predicted", "measured"))


def test_transfer_to_the_same_gpu_is_the_identity():
    comp = _load("dgx-h100")["compute"]
    same = transfer_compute(comp, source=gpu_spec("H100-SXM"), target=gpu_spec("H100-SXM"))
    for table in ("gemm_layout_table", "attention_table", "memory_table"):
        assert same[table] == comp[table]
    assert same["clock_table"] == comp["clock_table"]  # same die, same board power
    to_a100 = transfer_compute(comp, source=gpu_spec("H100-SXM"), target=gpu_spec("A100-SXM-80GB"))
    assert "clock_table" not in to_a100


def test_slower_peak_and_fewer_sms_follow_the_roofline():
    """A compute-bound point keeps its unexplained share; a memory-bound point follows the bandwidth."""
    a = {"peak": 1e15, "bw": 3e12, "sms": 100}
    half_peak = {"peak": 0.5e15, "bw": 3e12, "sms": 100}
    # compute bound, whole waves on both: same efficiency against the target's own peak
    assert transfer_point(efficiency=0.6, flops=1e12, nbytes=1e6, tiles=1000, source=a, target=half_peak) \
        == pytest.approx(0.6)
    # memory bound at the source (1e12 FLOP in 1 ms of compute, 3e10 bytes = 10 ms): half the peak
    # leaves the time unchanged, so the efficiency against the halved peak doubles
    e = transfer_point(efficiency=0.05, flops=1e12, nbytes=3e10, tiles=1000, source=a, target=half_peak)
    assert e == pytest.approx(0.1)
    # 100 tiles on 100 SMs fill one wave, on 80 SMs two waves of which the second is a quarter full
    fewer = {"peak": 1e15, "bw": 3e12, "sms": 80}
    assert transfer_point(efficiency=0.6, flops=1e12, nbytes=1e6, tiles=100, source=a, target=fewer) \
        == pytest.approx(0.6 * wave_efficiency(100, 80))


if __name__ == "__main__":  # the table of docs/validation.md section 3a: own tables against transferred
    import tempfile

    folder = Path(tempfile.mkdtemp())
    paths = {}
    for name, (gpu, src_name, src_gpu) in THROUGH.items():
        data = _load(name)
        data["compute"] = transfer_compute(_load(src_name)["compute"], source=gpu_spec(src_gpu), target=gpu_spec(gpu))
        paths[name] = folder / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump(data, sort_keys=False))
    for row in ROWS:
        m = float(row["step_time_s"])
        own, via = (run_scenario(load_model(Scenario, ROOT / "scenarios" / f"{row['scenario']}.yaml",
                                            list(row["overrides"]) + extra), fidelity="analytical").step_time_s
                    for extra in ([], [f"cluster.profile={paths[_profile_of(row)]}"]))
        print(f"| {row['run_id']} | {_profile_of(row)} | {1e3 * m:.1f} | {1e3 * own:.1f} ({100 * (own / m - 1):+.1f}%) "
              f"| {1e3 * via:.1f} ({100 * (via / m - 1):+.1f}%) |")
