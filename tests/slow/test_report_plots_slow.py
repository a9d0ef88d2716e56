"""The calibration report's files with their plot, by the library and by ``calibrate report`` (moved from
tests/unit/test_report.py): matplotlib's import and figures are most of their time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from clustersim.calibration import fit as F
from clustersim.calibration.report import evaluate, markdown, write_outputs
from clustersim.cli import calibrate_fit

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data" / "h200x2"
NT_LOG = DATA / "nt_all_reduce.txt"


def nt_rows(path: Path) -> list[dict]:
    """Contract 3 rows of an nccl-tests log (the project's importer; a tiny local reader without it)."""
    try:
        from clustersim.calibration.nccl_tests import parse_nccl_tests_log
    except ImportError:  # pragma: no cover
        rows = [{"kind": "meta", "gpu": "NVIDIA H200", "nvls": False}]
        for line in path.read_text().splitlines():
            p = line.split()
            if p and not p[0].startswith("#"):
                for col, inplace in ((5, False), (9, True)):
                    rows.append({"kind": "collective", "op": "all_reduce", "ranks": 2, "nodes": 1, "scope": "intra",
                                 "mode": "nccl", "size_bytes": int(p[0]), "time_us": float(p[col]), "inplace": inplace})
        return rows
    return parse_nccl_tests_log(str(path), warn=None)


@pytest.fixture(scope="module")
def real():
    meas = F.Measurements(rows=[r for r in (F.normalise_row(x) for x in nt_rows(NT_LOG)) if r is not None])
    prof = F.fit_profile(meas, name="h200x2-odd", holdout="odd").profile
    return meas, prof


def make_app() -> typer.Typer:
    root = typer.Typer()
    sub = typer.Typer()
    calibrate_fit.register(sub)
    root.add_typer(sub, name="calibrate")
    return root


def run_cli(*args: str):
    return CliRunner().invoke(make_app(), list(args))


@pytest.fixture()
def fitted(tmp_path):
    src = tmp_path / "ar.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in nt_rows(NT_LOG)))
    prof = tmp_path / "p.yaml"
    r = run_cli("calibrate", "fit", str(src), "-o", str(prof), "--holdout", "odd", "--topology", "hgx-h200")
    assert r.exit_code == 0, r.output
    return src, prof


def test_outputs_png_markdown_json(real, tmp_path):
    meas, prof = real
    rep = evaluate(meas.rows, prof, holdout="odd")
    paths = write_outputs(rep, tmp_path / "rep")
    pngs = [p for p in paths if p.suffix == ".png"]
    assert len(pngs) == 1 and pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "rep" / "summary.md").read_text()
    assert "| all_reduce 2r intra |" in md and "1 GiB" in md
    assert md == markdown(rep)
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert doc["holdout"] == "odd" and len(doc["points"]) == 15


def test_cli_report_table_and_files(fitted, tmp_path):
    src, prof = fitted
    r = run_cli("calibrate", "report", str(src), "--profile", str(prof), "-o", str(tmp_path / "out"))
    assert r.exit_code == 0, r.output
    assert "all_reduce" in r.stdout and "summary" in r.stdout
    assert (tmp_path / "out" / "summary.md").is_file() and list((tmp_path / "out").glob("*.png"))
