"""The figure markers of tools/doc_figures.py: parsing, checking and rewriting a small in-memory document.

The registry here is a stand-in (two figures and one that fails), so these tests run no simulation;
tests/integration/test_doc_figures.py checks README.md and docs/*.md against the real registry.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("doc_figures_under_test", ROOT / "tools" / "doc_figures.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


df = _load()

DOC = """# A page

The step takes <!-- fig:step -->7.79 s<!-- /fig --> on 1,024 GPUs, MFU <!-- fig:mfu -->42.9%<!-- /fig -->.

<!-- gen:table -->
| a | b |
|---|---|
| 1 | 2 |
<!-- /gen:table -->

An example of the syntax, in code, is not a marker: `<!-- fig:nothing -->1<!-- /fig -->`

```text
<!-- gen:also-nothing -->
```
"""

TABLE = "| a | b |\n|---|---|\n| 1 | 3 |\n"


def _registry(step: str = "7.79 s", table: str = TABLE):
    def broken() -> str:
        raise RuntimeError("no such scenario")
    return {"step": lambda: step, "mfu": lambda: "42.9%", "table": lambda: table, "broken": broken}


def test_parse_finds_inline_and_block_markers_but_not_examples_in_code():
    ms = df.parse(DOC)
    assert [(m.key, m.kind, m.line) for m in ms] == [("step", "fig", 3), ("mfu", "fig", 3), ("table", "gen", 5)]
    assert [m.shown(DOC) for m in ms] == ["7.79 s", "42.9%", "| a | b |\n|---|---|\n| 1 | 2 |\n"]


def test_check_reports_each_stale_marker_with_its_line_and_both_texts():
    probs = df.check_text(DOC, "page.md", df.Values(_registry(step="7.80 s")))
    assert [(p.line, p.key, p.reason) for p in probs] == [(3, "step", "stale"), (5, "table", "stale")]
    assert probs[0].shown == "7.79 s" and probs[0].now == "7.80 s"
    assert "page.md:3: step: stale" in str(probs[0]) and "7.80 s" in str(probs[0])
    # a block shows the lines that differ, not the whole text
    assert "-| 1 | 2 |" in str(probs[1]) and "+| 1 | 3 |" in str(probs[1]) and "| a | b |" not in str(probs[1])


def test_check_passes_a_document_that_matches():
    table = "| a | b |\n|---|---|\n| 1 | 2 |"  # a block's text may come without its final newline
    assert df.check_text(DOC, "page.md", df.Values(_registry(table=table))) == []


def test_unknown_and_failing_figures_are_problems_not_crashes():
    doc = "x <!-- fig:nope -->1<!-- /fig --> y <!-- fig:broken -->2<!-- /fig -->\n"
    probs = df.check_text(doc, "p.md", df.Values(_registry()))
    assert [(p.key, p.now) for p in probs] == [("nope", None), ("broken", None)]
    assert "unknown figure" in probs[0].reason
    assert "RuntimeError: no such scenario" in probs[1].reason


def test_write_refreshes_markers_and_leaves_everything_else():
    new, probs = df.write_text(DOC, df.Values(_registry(step="8.12 s")))
    assert probs == []
    assert new == DOC.replace("7.79 s", "8.12 s").replace("| 1 | 2 |\n<!--", "| 1 | 3 |\n<!--")
    assert df.check_text(new, "page.md", df.Values(_registry(step="8.12 s"))) == []
    # writing twice changes nothing more
    assert df.write_text(new, df.Values(_registry(step="8.12 s")))[0] == new


def test_each_figure_is_computed_once_per_check():
    calls = []

    def counted() -> str:
        calls.append(1)
        return "1"
    doc = "<!-- fig:n -->1<!-- /fig --> and again <!-- fig:n -->1<!-- /fig -->\n"
    values = df.Values({"n": counted})
    assert df.check_text(doc, "a.md", values) == [] and df.check_text(doc, "b.md", values) == []
    assert len(calls) == 1


@pytest.mark.parametrize("doc, what", [
    ("<!-- gen:t -->\nrow\n", "has no <!-- /gen:t -->"),
    ("a <!-- fig:x -->1 and no end\n", "not closed or not opened"),
    ("stray <!-- /fig --> here\n", "not closed or not opened"),
    ("<!-- gen:t -->\n<!-- gen:u -->\n<!-- /gen:u -->\n<!-- /gen:t -->\n", "a block opens inside"),
])
def test_broken_markers_are_refused_with_their_line(doc, what):
    with pytest.raises(df.MarkerError, match="line"):
        df.parse(doc)
    (p,) = df.check_text(doc, "bad.md", df.Values({}))
    assert what in p.reason


def test_an_inline_figure_cannot_span_lines():
    with pytest.raises(df.MarkerError, match="span lines"):
        df.render("<!-- fig:x -->1<!-- /fig -->", {"x": "1\n2"})


def test_the_studies_table_reports_a_missing_tools_studies(tmp_path, monkeypatch):
    monkeypatch.setattr(df, "ROOT", tmp_path)
    (p,) = df.check_text("<!-- gen:studies-table -->\n<!-- /gen:studies-table -->\n", "v.md", df.Values(df.FIGURES))
    assert "tools/studies.py missing" in p.reason


def test_wall_times_in_command_output_are_replaced():
    out = "x on 8 GPUs: 20 simulated, top 5 re-ranked at flow; 6.8 s   \nsweep 3.87 points/s 0:00:02\n"
    assert df._normalise(out) == "x on 8 GPUs: 20 simulated, top 5 re-ranked at flow; <wall time>\n" \
                                 "sweep 3.87 points/s <wall time>"


def test_every_registered_key_is_a_valid_marker_key():
    for key in df.FIGURES:
        assert df.parse(f"<!-- fig:{key} -->v<!-- /fig -->")[0].key == key, key
