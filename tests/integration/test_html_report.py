"""``clustersim run --html``: the standalone HTML step report, parsed and opened in headless Chromium.

The parser, the browser and the PNG decoder are shared with the ``clustersim report`` tests
(tests/integration/htmlcheck.py, which says what the Chromium tests need).
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from htmlcheck import EXTERNAL_TAGS, browser, decode_png, find_chromium, hex_rgb, parse

from clustersim.cli.run import run_and_write
from clustersim.report.html import render_html
from clustersim.report.kinds import KIND_COLORS
from clustersim.report.timeline import MAX_BARS, MAX_RANKS, layout_bars, select_ranks, trace_rows
from clustersim.units import format_bytes, format_time

ROOT = Path(__file__).resolve().parents[2]
HYBRID = "scenarios/hybrid-tp2-pp2-dp2.yaml"
JOB = "scenarios/ddp-mlp.yaml"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "clustersim", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def _report(tmp_path, scenario, *extra):
    out = tmp_path / (Path(scenario).stem + ".html")
    r = _cli("run", scenario, "--fidelity", "analytical", "--json", "--html", str(out), *extra)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)  # --json still prints exactly one document
    return d, out, out.read_text(encoding="utf-8")


def _check_common(d: dict, text: str) -> Doc:
    doc = parse(text)
    assert text.startswith("<!DOCTYPE html>")
    assert not (EXTERNAL_TAGS & set(doc.tags)), sorted(EXTERNAL_TAGS & set(doc.tags))
    assert not doc.resource_attrs, doc.resource_attrs[:3]
    style = text[text.index("<style>"):text.index("</style>")]
    assert "url(" not in style and "@import" not in style
    for i in ("header", "metrics", "metric-step-time", "timeline", "breakdown-bar", "breakdown", "memory", "links"):
        assert i in doc.ids, i
    assert doc.tags.get("svg", 0) >= 2 and doc.tags.get("style") == 1
    # the key metric is the --json step time, to the bit, and printed as the CLI prints it
    assert float(doc.ids["metric-step-time"]["data-value"]) == d["step_time_s"]
    assert format_time(d["step_time_s"]) in doc.text["metric-step-time"]
    assert d["scenario"] in doc.text["header"] and d["fidelity"] in doc.text["header"]
    assert doc.rects and all(r["title"].strip() for r in doc.rects)
    # breakdown table: every part with its time
    for k, v in d["breakdown"].items():
        assert f"{k}{format_time(v)}" in doc.text["breakdown"].replace("\n", "")
    assert len(text.encode()) < 5_000_000
    return doc


# ------------------------------------------------------------------------------- the reports
@pytest.fixture(scope="module")
def hybrid(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("hybrid"), HYBRID)


def test_hybrid_report_content(hybrid):
    d, path, text = hybrid
    doc = _check_common(d, text)
    head = doc.text["header"]
    assert "hgx-h200" in head and "H200" in head and "tp 2, pp 2, dp 2" in head and "profile" in head
    assert doc.text["metric-tokens"].startswith(f"{d['tokens_per_s']:,.0f}")
    assert f"{100 * d['mfu']:.1f} %" in doc.text["metric-mfu"]
    # one row per rank x stream of the executor ranks (first rank of each pipeline stage)
    assert "rank 0 (" in doc.text["timeline"] and "rank 4 (" in doc.text["timeline"]
    assert {"compute", "tp", "dp", "pp_f", "pp_b"} <= set(doc.stream_labels)
    kinds = {r["class"] for r in doc.rects}
    assert {"k-compute", "k-comm_tp", "k-comm_dp", "k-comm_pp", "k-idle", "k-optimizer"} <= kinds, kinds
    tp = [r["title"] for r in doc.rects if r["class"] == "k-comm_tp" and "aggregated" not in r["title"]]
    assert tp and all("duration" in t and "bytes" in t and "group tp" in t for t in tp)
    # memory table: capacity and fits
    m = d["memory"]
    assert format_bytes(m["capacity_bytes"]) in doc.text["memory"]
    assert format_bytes(m["peak_bytes_per_gpu"]) in doc.text["memory"]
    assert ("fitsyes" if m["fits"] else "fitsNO") in doc.text["memory"].replace("\n", "")
    # busiest links, in order
    pos = [doc.text["links"].index(row["link"]) for row in d["links"]]
    assert pos == sorted(pos) and len(pos) == len(d["links"]) > 0


def test_report_is_deterministic(tmp_path):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    ra, _ = run_and_write(ROOT / HYBRID, html_path=a, fidelity="analytical")
    run_and_write(ROOT / HYBRID, html_path=b, fidelity="analytical")
    assert a.read_bytes() == b.read_bytes()
    assert repr(ra.step_time_s) in a.read_text()


def test_generic_job_report(tmp_path):
    d, path, text = _report(tmp_path, JOB)
    doc = _check_common(d, text)
    assert "generic job, 10 iterations" in doc.text["header"]
    assert "Not modelled" in doc.text["memory"]
    assert "10 iterations" in doc.text["timeline-note"]
    # all 8 ranks drawn, one compute row each; the job's host phase and all-reduce are there
    assert doc.stream_labels == ["compute"] * 8
    kinds = {r["class"] for r in doc.rects}
    assert {"k-compute", "k-host", "k-comm_dp"} <= kinds, kinds
    ar = [r["title"] for r in doc.rects if "all_reduce" in r["title"] and "aggregated" not in r["title"]]
    assert ar and all(format_bytes(268e6) in t for t in ar)


def test_text_is_escaped(tmp_path):
    nasty = '<i>x</i> & "q" <script>alert(1)</script>'
    d, path, text = _report(tmp_path, JOB, "--set", f"name={nasty}", "--set", "description=a<b>c")
    assert d["scenario"] == nasty
    doc = _check_common(d, text)
    assert "<script" not in text and "<i>" not in text and "a<b>c" not in text
    assert "&lt;i&gt;x&lt;/i&gt; &amp; &quot;q&quot;" in text
    assert nasty in doc.text["title"]


def test_large_run_is_capped(tmp_path):
    out = tmp_path / "big.html"
    res, _ = run_and_write(ROOT / "scenarios/gpt3-175b.yaml", html_path=out, fidelity="analytical")
    text = out.read_text()
    assert len(text.encode()) < 5_000_000
    doc = parse(text)
    assert float(doc.ids["metric-step-time"]["data-value"]) == res.step_time_s
    assert 0 < len(doc.rects) <= MAX_BARS
    ranks = re.search(r"ranks shown: ([0-9, ]+)", doc.text["timeline-note"]).group(1).split(", ")
    assert 1 < len(ranks) <= MAX_RANKS


def _synthetic(n_ranks: int, n_ops: int) -> list[dict]:
    """Dense tiny ops (alternating kinds on the tp stream) and a few long compute ops per rank."""
    ev = []
    for r in range(n_ranks):
        ev.append({"ph": "M", "name": "process_name", "pid": r, "tid": 0, "args": {"name": f"rank {r}"}})
        ev.append({"ph": "M", "name": "thread_name", "pid": r, "tid": 0, "args": {"name": "compute"}})
        ev.append({"ph": "M", "name": "thread_name", "pid": r, "tid": 1, "args": {"name": "tp"}})
        for k in range(4):
            ev.append({"ph": "X", "name": f"layer {k}", "cat": "compute", "pid": r, "tid": 0, "ts": 2e5 * k + 1e4,
                       "dur": 1.5e5, "args": {}})
        for k in range(n_ops):
            ev.append({"ph": "X", "name": f"all_gather {k}", "cat": "comm_tp" if k % 3 else "comm_pp", "pid": r,
                       "tid": 1, "ts": k * 8e5 / n_ops, "dur": 4e5 / n_ops,
                       "args": {"op": "all_gather", "group": "tp", "bytes": 1000, "ranks": [r, r + 1]}})
    return ev


def test_aggregation_keeps_every_op_and_the_cap():
    ev = _synthetic(24, 4000)
    d = {"scenario": "synthetic", "fidelity": "analytical", "n_gpus": 24, "step_time_s": 0.8, "ops": 0,
         "breakdown": {"compute": 0.6, "bubble": 0.2}, "memory": None, "links": []}
    text = render_html(d, ev, {}, max_bars=2000)
    doc = parse(text)
    assert 0 < len(doc.rects) <= 2000 and len(text.encode()) < 5_000_000
    drawn_ranks = {int(m) for m in re.findall(r"on rank (\d+)", " ".join(r["title"] for r in doc.rects))}
    assert len(drawn_ranks) == MAX_RANKS
    # every op of the drawn ranks is in exactly one bar: singles plus the counts of the aggregates
    counted = 0
    for r in doc.rects:
        if r["class"] == "k-idle":
            continue
        m = re.match(r"(\d+) ops aggregated", r["title"])
        counted += int(m.group(1)) if m else 1
    assert counted == MAX_RANKS * (4000 + 4)
    # without the cap every op is its own bar
    rows = trace_rows(ev, [0])
    layout_bars(rows, 0.8, max_bars=10**9, plot_w=10**7)
    assert sum(1 for r in rows for b in r.bars if b.kind != "idle") == 4004


def test_rank_choice_prefers_stage_leaders():
    from clustersim.workload.transformer import Layout

    lay = Layout({"tp": 2, "cp": 1, "ep": 1, "dp": 8, "pp": 4}, "tp-cp-ep-dp-pp")
    chosen = select_ranks(list(range(64)), lay.coords, 16)
    assert len(chosen) == 16 and chosen == sorted(chosen)
    assert {lay.rank(pp=j) for j in range(4)} <= set(chosen)  # first rank of each stage
    assert all(lay.coords(r)["tp"] == 0 for r in chosen)  # then first ranks of other TP groups
    many = Layout({"tp": 1, "cp": 1, "ep": 1, "dp": 1, "pp": 40}, "tp-cp-ep-dp-pp")
    ch = select_ranks(list(range(40)), many.coords, 16)
    assert len(ch) == 16 and ch[0] == 0 and ch[-1] == 39
    assert select_ranks([3, 1, 2], None, 16) == [1, 2, 3]


# --------------------------------------------------------------------------------- Chromium
@pytest.fixture(scope="module")
def chromium():
    return find_chromium()


def test_png_decoder_roundtrip():
    """The decoder against a PNG written here with every filter type."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    rows = []
    for y in range(6):
        f = y % 5
        line = img[y].reshape(-1).astype(np.int32)
        prev = img[y - 1].reshape(-1).astype(np.int32) if y else np.zeros_like(line)
        left = np.concatenate([np.zeros(3, dtype=np.int32), line[:-3]])
        ul = np.concatenate([np.zeros(3, dtype=np.int32), prev[:-3]])
        if f == 0:
            enc = line
        elif f == 1:
            enc = line - left
        elif f == 2:
            enc = line - prev
        elif f == 3:
            enc = line - (left + prev) // 2
        else:
            pa, pb, pc = np.abs(prev - ul), np.abs(left - ul), np.abs(left + prev - 2 * ul)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, ul))
            enc = line - pred
        rows.append(bytes([f]) + (enc & 255).astype(np.uint8).tobytes())

    def chunk(k, b):
        return struct.pack(">I", len(b)) + k + b + struct.pack(">I", zlib.crc32(k + b))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 5, 6, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))
    assert np.array_equal(decode_png(png), img)


def test_chromium_renders_report(chromium, hybrid, tmp_path):
    d, path, text = hybrid
    src = parse(text)
    url = path.resolve().as_uri()
    dom = browser(chromium, tmp_path, "--dump-dom", url).stdout
    assert 'id="timeline"' in dom and 'id="metric-step-time"' in dom
    rendered = parse(dom)
    assert format_time(d["step_time_s"]) in rendered.text["metric-step-time"]
    assert float(rendered.ids["metric-step-time"]["data-value"]) == d["step_time_s"]
    assert len(rendered.rects) == len(src.rects) > 0

    shot = tmp_path / "shot.png"
    browser(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1400,1000", url)
    img = decode_png(shot.read_bytes())
    assert img.shape[:2] == (1000, 1400), img.shape
    rgb = img[:, :, :3].astype(np.int32)
    colours = np.unique(rgb.reshape(-1, 3), axis=0)
    assert len(colours) >= 200, f"only {len(colours)} colours: blank page?"
    white = np.all(rgb >= 250, axis=2).mean()
    assert white < 0.95, f"{100 * white:.1f} % white"
    # the timeline and the breakdown bar are painted: filled areas in the compute and TP colours
    for kind in ("compute", "comm_tp"):
        near = np.all(np.abs(rgb - hex_rgb(KIND_COLORS[kind])) <= 6, axis=2).sum()
        assert near > 2000, f"{kind}: {near} pixels of {KIND_COLORS[kind]}"
