"""`calibrate bench` on CPU/gloo under torchrun (2 processes): rows, resume, a run killed half-way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clustersim.calibration.bench import OPS, op_layout, summarize
from clustersim.calibration.jsonl import RowWriter, read_rows, row_key

pytestmark = pytest.mark.slow

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
BENCH = ["-m", "clustersim", "calibrate", "bench", "--device", "cpu", "--no-progress"]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}


def _run(args: list[str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(TORCHRUN + BENCH + args, capture_output=True, text=True, env=_env(), timeout=timeout)


def _children(pid: int) -> list[int]:
    """Child process ids of ``pid`` (Linux /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


@pytest.mark.torch
def test_quick_run_rows_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    res = _run(["-o", str(out), "--quick"])
    assert res.returncode == 0, res.stderr[-3000:]
    rows = read_rows(out, strict=True)
    assert rows[0]["kind"] == "meta" and rows[0]["world_size"] == 2 and rows[0]["launcher"] == "torchrun"
    assert rows[0]["backend"] == "gloo" and rows[0]["source"] == "bench"
    assert len({r["run_id"] for r in rows}) == 1
    (init,) = [r for r in rows if r["kind"] == "comm_init"]
    assert init["ranks"] == 2 and init["nodes"] == 1 and 0 < init["time_s"] <= init["since_process_start_s"]
    coll = [r for r in rows if r["kind"] == "collective"]
    sizes = [1024, 4096, 16384, 65536]
    for op in OPS:
        for mode in ("nccl", "framework"):
            pts = sorted((r for r in coll if r["op"] == op and r["mode"] == mode), key=lambda r: r["size_bytes"])
            assert [r["size_bytes"] for r in pts] == sizes, (op, mode)
            for r in pts:
                assert r["ranks"] == 2 and r["scope"] == "intra" and r["dtype"] == "float32"
                assert r["time_us_min"] <= r["time_us_p10"] <= r["time_us"] <= r["time_us_p90"]
                assert r["algbw_GBps"] == pytest.approx(r["size_bytes"] / r["time_us"] / 1e3)
                factor = {"all_reduce": 1.0, "broadcast": 1.0, "send_recv": 1.0}.get(op, 0.5)
                assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * factor)
                assert r["inplace"] == (op in ("all_reduce", "broadcast"))
                assert r["iters"] == (5 if mode == "nccl" else 1)
    fc = [r for r in rows if r["kind"] == "framework_call"]
    assert sorted(r["op"] for r in fc) == sorted(OPS) and all(r["size_bytes"] == 1024 for r in fc)
    gemm = [r for r in rows if r["kind"] == "gemm"]
    assert {(r["m"], r["n"], r["k"]) for r in gemm} == {(256, 256, 256), (512, 512, 512)}
    for r in gemm:
        assert r["tflops"] == pytest.approx(2 * r["m"] * r["n"] * r["k"] / (r["time_us"] * 1e-6) / 1e12)
    assert not [r for r in rows if r["kind"] in ("hbm", "launch")]  # CUDA only
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys))

    # same command again: everything is there, nothing is measured twice
    before = out.read_bytes()
    res = _run(["-o", str(out), "--quick"])
    assert res.returncode == 0, res.stderr[-3000:]
    assert out.read_bytes() == before
    assert "0 rows" in res.stderr and f"{len(rows)} points were already there" in res.stderr


@pytest.mark.torch
def test_killed_run_keeps_rows_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "k.jsonl"
    args = ["-o", str(out), "--ops", "all_reduce", "--sizes", "1KiB:8MiB", "--modes", "nccl", "--iters", "20",
            "--reps", "3", "--no-gemm"]
    proc = subprocess.Popen(TORCHRUN + BENCH + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            n = out.read_text().count('"kind": "collective"') if out.exists() else 0
            if n >= 4 or proc.poll() is not None:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before it could be killed"
    finally:
        # torchrun starts each worker in a session of its own: kill the workers first (a crash, no clean-up),
        # by the ids torchrun reports as its children, then torchrun itself
        for pid in _children(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    kept = read_rows(out, strict=True)
    first = [r for r in kept if r["kind"] == "collective"]
    assert 4 <= len(first) < 14
    prefix = out.read_bytes()

    # resume through the dependency-light entry point (python -m clustersim.calibration.bench): same rows, same keys
    res = subprocess.run(TORCHRUN + ["-m", "clustersim.calibration.bench", "--device", "cpu", "--no-progress", *args],
                         capture_output=True, text=True, env=_env(), timeout=180)
    assert res.returncode == 0, res.stderr[-3000:]
    assert out.read_bytes().startswith(prefix)  # nothing measured was lost or rewritten
    rows = read_rows(out, strict=True)
    coll = [r for r in rows if r["kind"] == "collective"]
    assert sorted(r["size_bytes"] for r in coll) == [2**i for i in range(10, 24)]
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys))
    # the resumed run continues the killed run's id (same configuration): one meta and one comm_init row
    # for it, no row left under a run id without its meta row
    assert len({r["run_id"] for r in coll}) == 1
    assert [r["run_id"] for r in rows if r["kind"] == "meta"] == [coll[0]["run_id"]]
    assert len([r for r in rows if r["kind"] == "comm_init"]) == 1


def test_row_writer_cut_row_and_reader(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"kind": "gemm", "m": 1, "n": 2, "k": 3}\n{"kind": "hbm", "bytes": 5')  # cut mid-row
    warnings: list[str] = []
    assert [r["kind"] for r in read_rows(p, warn=warnings.append)] == ["gemm"]
    assert warnings and f"{p}:2:" in warnings[0]
    with RowWriter(p, {"source": "bench"}) as w:
        w.write({"kind": "hbm", "bytes": 5, "bandwidth_GBps": float("nan")})
    rows = read_rows(p, strict=True)
    assert rows == [{"kind": "gemm", "m": 1, "n": 2, "k": 3},
                    {"source": "bench", "kind": "hbm", "bytes": 5, "bandwidth_GBps": None}]
    # a complete last row without its newline is kept
    q = tmp_path / "n.jsonl"
    q.write_text('{"kind": "launch", "overhead_us": 2.5}')
    with RowWriter(q) as w:
        w.write({"kind": "comm_init", "ranks": 2, "time_s": 1.0})
    assert [r["kind"] for r in read_rows(q, strict=True)] == ["launch", "comm_init"]
    json.loads(q.read_text().splitlines()[1])


def test_layout_and_summary() -> None:
    # nccl-tests conventions: AG/RS size = whole buffer, per-rank part rounded down to 16 bytes
    assert op_layout("all_gather", 1000, 3, 4) == (80, 240, 960)
    assert op_layout("reduce_scatter", 1024, 2, 4) == (256, 128, 1024)
    assert op_layout("all_to_all", 4096, 4, 2) == (2048, 2048, 4096)
    assert op_layout("send_recv", 1024, 8, 4) == (256, 256, 1024)
    assert op_layout("all_gather", 16, 4, 4) is None
    s = summarize([1e-6 * v for v in range(1, 11)])
    assert s["time_us"] == pytest.approx(5.5) and s["time_us_min"] == pytest.approx(1.0)
    assert s["time_us_p10"] == pytest.approx(1.9) and s["time_us_p90"] == pytest.approx(9.1)


@pytest.mark.torch
def test_single_process_compute_only(tmp_path: Path) -> None:
    """No launcher, --ops none: the one-GPU (compute only) path, here on CPU."""
    out = tmp_path / "c.jsonl"
    env = {k: v for k, v in _env().items() if k not in ("RANK", "WORLD_SIZE", "MASTER_PORT")}
    res = subprocess.run([sys.executable, *BENCH, "-o", str(out), "--quick", "--ops", "none"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = read_rows(out, strict=True)
    assert rows[0]["kind"] == "meta" and rows[0]["world_size"] == 1 and rows[0]["launcher"] == "single"
    assert [r["kind"] for r in rows[1:]] == ["comm_init", "gemm", "gemm"]


@pytest.mark.parametrize("args,text", [
    # --ops and --nvls are checked by the bench itself, after the CLI's "needs torch" check
    pytest.param(["--ops", "all_reduce,foo"], "--ops: unknown operation 'foo'", marks=pytest.mark.torch),
    (["--sizes", "4GiB:1KiB"], "size range"),
    pytest.param(["--nvls", "maybe"], "--nvls", marks=pytest.mark.torch),
    (["--gemm-shapes", "1,2"], "--gemm-shapes"),
])
def test_bench_user_errors(tmp_path: Path, args: list[str], text: str) -> None:
    res = subprocess.run([sys.executable, *BENCH, "-o", str(tmp_path / "e.jsonl"), *args], capture_output=True,
                         text=True, env=_env(), timeout=120)
    assert res.returncode == 2 and text in res.stderr.replace("\n", " ") and "Traceback" not in res.stderr
    assert not (tmp_path / "e.jsonl").exists()


def test_default_gemm_shapes_cover_the_h200_sample() -> None:
    from clustersim.calibration.bench import DEFAULT_GEMM_SHAPES

    sample = Path(__file__).resolve().parents[1] / "data" / "h200x2" / "gemm.jsonl"
    shapes = {(r["m"], r["n"], r["k"]) for r in read_rows(sample, strict=True) if "m" in r}
    assert len(shapes) == 24 and shapes <= set(DEFAULT_GEMM_SHAPES)
