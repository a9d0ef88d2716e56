"""``clustersim report``: the page of a run, a plan and a sweep, checked in the source and in headless Chromium.

Each kind is made by the command that writes it (``run --json --trace``, ``plan --json``,
``sweep``), turned into a page by ``clustersim report``, and then checked: the numbers on the page
are the numbers of the input, nothing is fetched (the only URIs are the sweep's embedded
``data:image/png``), the same input gives the same bytes, and Chromium renders it without a
console message, with the plots painted (their colours on the screenshot).
"""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from htmlcheck import CONSOLE_FLAGS, EXTERNAL_TAGS, browser, console_messages, find_chromium, hex_rgb, parse

from clustersim.report.kinds import KIND_COLORS
from clustersim.sweep.analysis import scaling
from clustersim.units import format_time

ROOT = Path(__file__).resolve().parents[2]
# matplotlib colour of the compute part in the sweep's own breakdown.png (clustersim.sweep.plots)
PNG_COMPUTE = "#4c72b0"


def _cli(*args) -> str:
    """Run ``clustersim ARGS`` in this process (paths are absolute or relative to the repository);
    returns stdout, asserts exit 0."""
    from clustersim.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
    assert code in (0, None), err.getvalue()[-3000:]
    return out.getvalue()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The three inputs and their pages: {kind: (input path, data, page path, page text)}."""
    d = tmp_path_factory.mktemp("report")
    out = {}
    run_json, trace = d / "run.json", d / "trace.json"
    run_json.write_text(_cli("run", "scenarios/hybrid-tp2-pp2-dp2.yaml", "--fidelity", "analytical", "--json",
                             "--trace", str(trace)))
    plan_json = d / "plan.json"
    plan_json.write_text(_cli("plan", "scenarios/ref-tp2.yaml", "--json", "--top", "6", "--micro-batch", "2,4",
                              "--workers", "1"))
    sweep_dir = d / "pi"
    _cli("sweep", "scenarios/study-pi-scaling.yaml", "-o", str(sweep_dir), "--executor", "serial", "--no-progress",
         "--set", "simulation.fidelity=analytical")
    for kind, src, extra in (("run", run_json, ["--trace", str(trace)]), ("plan", plan_json, []),
                             ("sweep", sweep_dir, [])):
        page = d / f"{kind}.html"
        assert f"{kind} report written to {page}" in " ".join(_cli("report", str(src), "-o", str(page), *extra).split())
        data = json.loads(src.read_text()) if kind != "sweep" else list(csv.DictReader(open(src / "results.csv")))
        out[kind] = (src, data, page, page.read_text(encoding="utf-8"))
    return out


def _self_contained(text: str, doc) -> None:
    assert text.startswith("<!DOCTYPE html>")
    assert not (EXTERNAL_TAGS - {"img"}) & set(doc.tags), sorted(EXTERNAL_TAGS & set(doc.tags))
    # the only resources are embedded PNGs (a sweep's own plots)
    assert all(" src=data:image/png;base64," in a for a in doc.resource_attrs), doc.resource_attrs[:3]
    assert not re.search(r"https?://", text.replace("http://www.w3.org/2000/svg", ""))
    assert doc.tags.get("style") == 1 and doc.tags.get("script") is None


def test_run_page(made):
    src, d, page, text = made["run"]
    doc = parse(text)
    _self_contained(text, doc)
    assert float(doc.ids["metric-step-time"]["data-value"]) == d["step_time_s"]
    assert format_time(d["step_time_s"]) in doc.text["metric-step-time"]
    assert "run.json" in doc.text["header"] and d["scenario"] in doc.text["header"]
    # with --trace the timeline is there: bars of compute and TP on the executor ranks
    assert {"k-compute", "k-comm_tp"} <= {r["class"] for r in doc.rects}
    for k, v in d["breakdown"].items():
        assert f"{k}{format_time(v)}" in doc.text["breakdown"].replace("\n", "")


def test_run_page_without_trace(made, tmp_path):
    src = made["run"][0]
    out = tmp_path / "r.html"
    _cli("report", str(src), "-o", str(out))
    doc = parse(out.read_text())
    assert "timeline" not in doc.ids and "No trace events given" in doc.text["timeline-note"]
    assert "breakdown-bar" in doc.ids and "memory" in doc.ids


def test_plan_page(made):
    src, d, page, text = made["plan"]
    doc = parse(text)
    _self_contained(text, doc)
    plans = d["plans"]
    assert plans and float(doc.ids["metric-step-time"]["data-value"]) == plans[0]["step_time_s"]
    assert float(doc.ids["metric-evaluated"]["data-value"]) == d["evaluated"]
    # one table row per plan, in the planner's order, with its step time
    rows = re.findall(r"<tr><td class=\"num\">(\d+)</td>", text[text.index('id="plans"'):text.index("</table>", text.index('id="plans"'))])
    assert rows == [str(i) for i in range(1, len(plans) + 1)]
    for p in plans:
        assert format_time(p["step_time_s"]) in doc.text["plans"]
    # why the rest fell out: every constraint with its count, and the examples of those that removed any
    removed = 0
    for c in d["constraints"]:
        assert f"{c['constraint']}{c['description']}{c['removed']:,}" in doc.text["constraints"].replace("\n", "")
        if c["removed"]:
            assert c["reason"] in doc.text["constraints"]
        removed += c["removed"]
    assert removed > 0 and removed + d["feasible"] == d["evaluated"]
    assert f"{removed:,} of {d['evaluated']:,} mixes broke a rule" in doc.text["dropped-note"]
    assert doc.text["constraints-bar"].count(" mixes; ") == sum(1 for c in d["constraints"] if c["removed"])
    assert "plan-breakdown" in doc.ids and "funnel" in doc.ids


def test_sweep_page(made):
    src, rows, page, text = made["sweep"]
    doc = parse(text)
    _self_contained(text, doc)
    # one table row per point, each step time shown
    assert doc.text["points"].count("ok") == len(rows) == 4
    for r in rows:
        assert format_time(float(r["step_time_s"])) in doc.text["points"]
    # the scaling table is sweep.analysis.scaling of the CSV's rows, strong (no batch grows)
    pts = scaling([{"n_gpus": int(r["n_gpus"]), "step_time_s": float(r["step_time_s"])} for r in rows])
    for p in pts:
        assert f"{p['n']:g}{format_time(p['time'])}{p['speedup']:.3f}{p['efficiency']:.3f}" in \
            doc.text["scaling"].replace("\n", "")
    assert "strong scaling" in doc.text["scaling-note"]
    assert {"scaling-speedup", "scaling-efficiency", "sweep-breakdown"} <= set(doc.ids)
    # the sweep's PNG plots, embedded byte for byte
    pngs = sorted(src.glob("*.png"))
    assert pngs
    embedded = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert [base64.b64decode(e) for e in embedded] == [p.read_bytes() for p in pngs]


def test_pages_are_deterministic(made, tmp_path):
    for kind, (src, _, page, text) in made.items():
        again = tmp_path / f"{kind}.html"
        extra = ["--trace", str(src.parent / "trace.json")] if kind == "run" else []
        _cli("report", str(src), "-o", str(again), *extra)
        assert again.read_bytes() == page.read_bytes(), kind


def test_sweep_csv_and_json_inputs(made, tmp_path):
    """results.csv (inside its folder) and sweep --json give the folder's page."""
    src, rows, page, text = made["sweep"]
    a = tmp_path / "csv.html"
    _cli("report", str(src / "results.csv"), "-o", str(a))
    doc = parse(a.read_text())
    assert doc.text["points"] == parse(text).text["points"]
    assert a.read_text().count("data:image/png;base64,") == len(list(src.glob("*.png")))


# --------------------------------------------------------------------------------- Chromium
@pytest.fixture(scope="module")
def chromium():
    return find_chromium()


def test_console_check_can_fail(chromium, tmp_path):
    """The console check sees a page's console.error and an uncaught exception."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><p>x</p><script>console.error("boom"); nope();</script></body></html>')
    r = browser(chromium, tmp_path, *CONSOLE_FLAGS, "--dump-dom", bad.resolve().as_uri())
    msgs = console_messages(r.stderr)
    assert any("boom" in m for m in msgs) and any("nope" in m for m in msgs), r.stderr[-2000:]


def _pixels(img: np.ndarray, colour: str, tol: int = 3) -> int:
    rgb = img[:, :, :3].astype(np.int32)
    return int(np.all(np.abs(rgb - hex_rgb(colour)) <= tol, axis=2).sum())


@pytest.mark.parametrize("kind", ["run", "plan", "sweep"])
def test_chromium_renders(chromium, made, kind, tmp_path):
    """One browser run per page: its console stays silent and its plots are painted."""
    src, data, page, text = made[kind]
    shot = tmp_path / "shot.png"
    r = browser(chromium, tmp_path, *CONSOLE_FLAGS, f"--screenshot={shot}", "--window-size=1400,2000",
                page.resolve().as_uri())
    assert not console_messages(r.stderr), console_messages(r.stderr)
    from PIL import Image  # pillow comes with matplotlib; decode_png's pure-Python filters take ~10 s here

    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.shape[:2] == (2000, 1400), img.shape
    white = np.all(img[:, :, :3] >= 250, axis=2).mean()
    assert white < 0.97, f"{100 * white:.1f} % white: blank page?"
    # the plots are painted: filled areas in their colours
    want = {"run": [KIND_COLORS["compute"], KIND_COLORS["comm_tp"]],
            "plan": [KIND_COLORS["compute"], "#e15759"],  # breakdown bars, constraint bars (rect.drop)
            "sweep": [KIND_COLORS["compute"], PNG_COMPUTE]}[kind]  # SVG breakdown bars, the embedded PNG
    for colour in want:
        n = _pixels(img, colour)
        assert n > 1500, f"{kind}: {n} pixels of {colour}"
