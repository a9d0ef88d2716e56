"""The measured fixed cost of the Monte-Carlo π timed section on one GPU (validation/probes/pi-timed-section/pi-h100).

docs/studies.md ("Monte-Carlo π") rules out a per-process fixed cost as the cause of the
exercise's 48-108 ms losses with these rows: c = (n T(N/n) - T(N)) / (n - 1) must stay far below
the 100-140 ms such a cost would need. The rows are the measurement as written by
validation/probes/pi-timed-section/run.sh; this test recomputes the documented numbers from them.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

RAW = Path(__file__).resolve().parents[2] / "validation" / "probes" / "pi-timed-section" / "pi-h100"


def _times() -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for line in (RAW / "rows.txt").read_text().splitlines():
        split, _rep, samples, _blocks, _threads, timed, kernel, pi = line.split()
        assert int(samples) * int(split) == 10**13
        assert abs(float(pi) - 3.14159265) < 1e-5, f"{line=}"  # the kernel really sampled
        assert 0 < float(timed) - float(kernel) < 2e-3, f"{line=}"  # launch + CUB sum + sync: under 2 ms
        out.setdefault(int(split), []).append(float(timed))
    return out


def test_one_process_has_no_fixed_cost_of_the_size_the_exercise_loses():
    t = _times()
    assert sorted(t) == [1, 2, 4, 8] and all(len(v) == 3 for v in t.values())
    t1, fast1 = statistics.median(t[1]), min(t[1])
    documented = {2: (0.02, 0.25), 4: (6.5, 0.17), 8: (0.08, 0.12)}  # ms, docs/studies.md
    for n, (c_med, c_fast) in documented.items():
        med = (n * statistics.median(t[n]) - t1) / (n - 1) * 1e3
        fast = (n * min(t[n]) - fast1) / (n - 1) * 1e3
        assert med == pytest.approx(c_med, abs=0.05) and fast == pytest.approx(c_fast, abs=0.05), \
            f"{n=}, {c_med=}, {c_fast=}"
        # an Amdahl cost explaining the exercise's loss at n would be (T(n) - T(1)/n) / (1 - 1/n)
        needed = {2: 48e-3, 4: 108e-3, 8: 104e-3}[n] / (1 - 1 / n) * 1e3
        assert max(med, fast) < needed / 10, f"{n=}, {c_med=}, {c_fast=}"


def test_the_clock_was_at_its_maximum_while_sampling():
    rows = [ln.split(", ") for ln in (RAW / "clocks.csv").read_text().splitlines()]
    mhz = [int(r[1].split()[0]) for r in rows]
    watts = [float(r[2].split()[0]) for r in rows]
    assert mhz.count(1980) > 0.99 * len(mhz) and max(watts) < 700
