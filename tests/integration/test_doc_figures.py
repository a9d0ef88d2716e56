"""Every figure quoted in README.md and docs/*.md is what the code gives now (tools/doc_figures.py).

A number the code computes is written between markers in the docs; this test recomputes each one
(memoised, so one simulation serves every figure read from it) and fails listing every stale or
unknown marker with its file and line, the text shown and the text now. ``python
tools/doc_figures.py --write`` refreshes them.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("doc_figures_integration", ROOT / "tools" / "doc_figures.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_every_marked_figure_matches_the_code():
    df = _load()
    paths = df.default_paths()
    assert ROOT / "README.md" in paths and len(paths) > 5
    markers = {p.name: len(df.parse(p.read_text())) for p in paths}
    assert markers["README.md"] >= 10, markers  # the worked examples and the headline rows are marked
    # the study index (gen:studies-table) and the bands' coverage (gen:band-coverage) are checked at the end of
    # test_validation_studies.py, whose
    # predictions of every study's rows it reads: computed here again it took 60 s of CPU
    problems = df.check(paths, skip={"studies-table", "band-coverage"})
    assert not problems, (f"{len(problems)} figures differ from the code "
                          "(python tools/doc_figures.py --write refreshes them):\n" + "\n".join(map(str, problems)))


def test_readme_is_an_index():
    """Under 10 KB, no table row over 300 characters, and the markers CI reads the test command from."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode()) < 10_000, len(text.encode())
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows and max(map(len, rows)) <= 300, max(rows, key=len)
    for marker in ("<!-- run-command -->", "<!-- /run-command -->", "<!-- test-command -->", "<!-- /test-command -->"):
        assert text.count(marker) == 1, marker
