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
    prof = load_model(Profile, ROOT / "calibrate" / "profiles" / "hgx-h200.yaml")
    fast, slow = profile_at_bound(prof, True), profile_at_bound(prof, False)
    moved = 0
    for e, ef, es in zip(prof.collectives, fast.collectives, slow.collectives):
        for s, sf, ss in zip(e.segments, ef.segments, es.segments):
            assert sf.algbw_GBps >= s.algbw_GBps >= ss.algbw_GBps
            assert sf.alpha_us <= s.alpha_us <= ss.alpha_us
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
