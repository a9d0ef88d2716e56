"""The profile's confidence intervals become a step-time band in `clustersim run --band`."""

import json
import subprocess
import sys
from pathlib import Path

from clustersim.config.base import load_model
from clustersim.config.profile import Profile
from clustersim.simulate.band import profile_at_bound

ROOT = Path(__file__).resolve().parents[2]


def test_bounds_move_the_calibrated_parameters():
    prof = load_model(Profile, ROOT / "profiles" / "hgx-h200.yaml")
    fast, slow = profile_at_bound(prof, True), profile_at_bound(prof, False)
    moved = 0
    for e, ef, es in zip(prof.collectives, fast.collectives, slow.collectives):
        for s, sf, ss in zip(e.segments, ef.segments, es.segments):
            row = f"{e.op} {e.ranks} ranks from {s.size_min_bytes} B"
            assert sf.algbw_GBps >= s.algbw_GBps >= ss.algbw_GBps, \
                f"{row}: algbw fast {sf.algbw_GBps} / fitted {s.algbw_GBps} / slow {ss.algbw_GBps} GB/s"
            assert sf.alpha_us <= s.alpha_us <= ss.alpha_us, \
                f"{row}: alpha fast {sf.alpha_us} / fitted {s.alpha_us} / slow {ss.alpha_us} us"
            moved += sf.algbw_GBps > ss.algbw_GBps
    assert moved > 0


def test_run_band_brackets_the_step_time():
    r = subprocess.run([sys.executable, "-m", "clustersim", "run", str(ROOT / "scenarios" / "gpt-1b-ddp.yaml"),
                        "--fidelity", "analytical", "--band", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    lo, hi = d["step_time_band_s"]
    assert lo <= d["step_time_s"] <= hi
    assert lo < hi


def _band_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("collective_band", ROOT / "profiles" / "collective_band.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shipped_factors_are_the_held_out_quantiles():
    """Each shipped profile's band factor is the 95% quantile of the model's errors on calls it never saw."""
    import numpy as np

    mod = _band_module()
    pub = np.concatenate(list(mod.published_errors().values()))
    meas = np.concatenate(list(mod.measured_errors().values()))
    a100 = mod.a100_link_errors()     # azure-ndv4's link model (8 + 16 GPUs) on the held-out 32-GPU log
    assert pub.size == 152 and meas.size == 138 and a100.size == 46
    # held-out points outside the band: about 5%, by construction of the quantile
    for name, err in (("published", pub), ("measured", meas), ("a100 link model", a100)):
        f = mod.factor(err)
        outside = np.mean(np.abs(err) > np.log(f))
        assert 0.03 <= outside <= 0.07, f"{name}: {outside:.1%} of {err.size} held-out calls outside x{f:.3f} (3-7%)"
    for path in sorted(p for p in (ROOT / "profiles").glob("*.yaml") if p.name != "inputs.yaml"):
        prof = load_model(Profile, path)
        expect = mod.factor({"hgx-h200": meas, "azure-ndv4": a100}.get(prof.name, pub))
        assert prof.uncertainty is not None, path.name
        assert abs(prof.uncertainty.time_factor - expect) < 1e-3, path.name


def test_band_is_wide_where_no_collective_was_measured():
    """GPT-3 175B on 1,024 H100 (published link classes): the band has width, and the slow side is
    the held-out factor on every collective (the fast side stops at the line rate)."""
    r = subprocess.run([sys.executable, "-m", "clustersim", "run", str(ROOT / "scenarios" / "gpt3-175b.yaml"),
                        "--fidelity", "analytical", "--band", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    lo, hi = d["step_time_band_s"]
    assert lo < d["step_time_s"] < hi
    assert hi / d["step_time_s"] > 1.05     # a visible width (was 0 before the held-out factor)


#: the FSDP2 host probe (validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt h7-fsdp2) and a GPU-bound DDP layout (blind set 9's rg-ddp2)
HOST_BOUND = ["model.layers=32", "model.hidden=256", "model.heads=4", "model.ffn_hidden=1024", "model.seq_len=256",
              "training.micro_batch=1", "training.global_batch=4"]
GPU_BOUND = ["model.hidden=2048", "model.ffn_hidden=8192", "training.micro_batch=4", "training.global_batch=16"]


def _band(scenario, sets):
    from clustersim.simulate.band import step_time_band
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario

    rs = resolve_scenario(ROOT / "scenarios" / scenario, sets)
    return (run_scenario(rs, fidelity="analytical").step_time_s,) + step_time_band(rs, fidelity="analytical")


def test_host_speed_band_widens_a_host_bound_step_only():
    """hgx-h200's host.speed_band (the host probe program's run-to-run spread) moves every host issue time: a host-bound
    FSDP2 step's band is about [t / f, t x f]; a GPU-bound DDP step's stays within 1%."""
    prof = load_model(Profile, ROOT / "profiles" / "hgx-h200.yaml")
    f = prof.host.speed_band.time_factor
    assert 1.1 < f < 1.6 and prof.host.speed_band.runs >= 10
    assert profile_at_bound(prof, False).host == prof.host   # the host moves in the graph, not in the profile
    t, lo, hi = _band("ref-fsdp2.yaml", HOST_BOUND)
    assert hi / t > 0.9 * f and t / lo > 0.9 * f
    t, lo, hi = _band("ref-ddp2.yaml", GPU_BOUND)
    assert hi / t < 1.01 and t / lo < 1.01


def test_host_speed_factor_is_the_quantile_of_the_probe_runs():
    """The shipped factor is what profiles/fsdp_hook.py's host_speed_band gives on the raw probe runs."""
    import importlib.util

    sys.path.insert(0, str(ROOT / "profiles"))
    spec = importlib.util.spec_from_file_location("fsdp_hook", ROOT / "profiles" / "fsdp_hook.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    prof = load_model(Profile, ROOT / "profiles" / "hgx-h200.yaml")
    band = mod.host_speed_band(prof, mod.HOST_PROBE_RUNS["H200"], "H200", mod.HOST_PROBE_SUMMARIES["H200"])
    assert band["runs"] == prof.host.speed_band.runs == 22
    assert abs(band["time_factor"] - prof.host.speed_band.time_factor) < 1e-3
