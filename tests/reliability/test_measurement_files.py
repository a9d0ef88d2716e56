"""Issue 37 (d): bad measurement files and fit options are refused, not fitted from what is left.

A file more than half of whose rows are unusable exits 2 (``N of M rows unusable``); results
nccl-tests found wrong refuse their log unless ``--allow-wrong`` (tests/reliability/test_garbage.py);
fit options out of range or for another machine exit 2 naming the option.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, cli

NT_LOG = REPO / "tests" / "data" / "h200x2" / "nt_all_reduce.txt"


@pytest.fixture(scope="module")
def nt_rows(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("nt") / "nt.jsonl"
    assert cli("calibrate", "import-nccl-tests", str(NT_LOG), "-o", str(out)).code == 0
    return [json.loads(x) for x in out.read_text().splitlines()]


def _write(path: Path, rows: list[dict], **change) -> Path:
    with open(path, "w") as fh:
        for r in rows:
            fh.write(json.dumps({**r, **change} if r["kind"] == "collective" else r) + "\n")
    return path


@pytest.mark.parametrize("time_us,needle", [
    (1e300, "'time_us' of 1e+300 exceeds 1e+12 (11.6 days"),   # was: a pydantic traceback in the segment fit
    (float("nan"), "'time_us' must be a number, got nan"),     # was: one warning per row, then a profile
    (0, "'time_us' must be > 0, got 0"),
], ids=["1e300", "nan", "zero"])
@pytest.mark.parametrize("command", ["fit", "report"])
def test_a_mostly_unusable_file_is_refused(tmp_path: Path, nt_rows: list[dict], time_us: float, needle: str,
                                           command: str) -> None:
    m = _write(tmp_path / "m.jsonl", nt_rows, time_us=time_us)
    args = ["-o", str(tmp_path / "p.yaml")] if command == "fit" else ["-p", "hgx-h200"]
    cli("calibrate", command, str(m), *args).refused(str(m), "60 of 61 rows unusable", needle)
    assert not (tmp_path / "p.yaml").exists()


def test_a_file_with_a_few_bad_rows_is_still_fitted(tmp_path: Path, nt_rows: list[dict]) -> None:
    rows = [dict(r) for r in nt_rows]
    for r in rows[1:6]:
        r["time_us"] = float("nan")
    m = _write(tmp_path / "m.jsonl", rows)
    r = cli("calibrate", "fit", str(m), "--topology", "hgx-h200", "-o", str(tmp_path / "p.yaml"))
    assert r.code == 0 and " ".join(r.err.split()).count("skipped ('time_us' must be a number") == 5, r.err


@pytest.mark.parametrize("args,needle", [
    (["--seed", "-1", "--ci", "bootstrap"], "--seed: must be in 0..4,294,967,295"),      # was: ValueError
    (["--topology", "dgx-a100"], "--topology: these rows were measured on NVIDIA H200: bandwidth_GBps"),  # pydantic
])
def test_fit_options(tmp_path: Path, args: list[str], needle: str) -> None:
    cli("calibrate", "fit", str(NT_LOG), "-o", str(tmp_path / "p.yaml"), *args).refused(needle)
    assert not (tmp_path / "p.yaml").exists()


def test_bench_timeout_zero_is_refused_before_torch(tmp_path: Path) -> None:
    # was: torch's DistNetworkError after a 0 ms rendezvous
    r = cli("calibrate", "bench", "--timeout", "0", "-o", str(tmp_path / "b.jsonl"))
    assert r.code == 2 and "'--timeout'" in r.err and "greater than or equal to 1" in r.err, r.err
    assert not (tmp_path / "b.jsonl").exists()
