"""Every validation study's checks, read from ``validation/*/expect.yaml`` (tools/studies.py says the format).

One parametrized test per kind of assertion, over every study folder: a new study adds a folder and an expect.yaml,
no test code. Each measured row is predicted from its scenario file and ``--set`` overrides with the topology's
shipped profile at both fidelities (nothing else is read from the measurement); a row in a check's ``known_misses``
is a strict expected failure with its reason, so a model change that brings it inside shows up.

    python -m pytest tests/integration/test_validation_studies.py -q
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import studies as S  # noqa: E402  (tools/studies.py)

STUDIES = S.studies()


def _checks(kind: str | None = None):
    """(test id, study, check) of every check (of ``kind``)."""
    out = []
    for s in STUDIES:
        for i, c in enumerate(s.checks):
            if kind is None or c.get("kind") == kind:
                out.append((f"{s.name}#{i}", s, c))
    return out


@pytest.mark.parametrize("study", STUDIES, ids=[s.name for s in STUDIES])
def test_expect_yaml_is_valid(study):
    assert S.problems(study) == [], f"{study.name}/expect.yaml: {S.problems(study)}"


TRAIN = _checks("train_steps")
TABLES = {tid: S.check_rows(s, c) for tid, s, c in TRAIN}


@pytest.mark.parametrize("tid,study,check", [(t, s, c) for t, s, c in TRAIN
                                             if c.get("rows") or any("count" in x for x in c.get("subchecks") or [])],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_rows_complete(tid, study, check):
    """The measured rows are the ones the study ran (count, GPUs, topology, names), and each subcheck's selection
    has the rows it names."""
    table = TABLES[tid]
    assert S.rows_problems(study, check, table) == [], f"{tid}: {S.rows_problems(study, check, table)}"
    for tol in S.tolerances(check, list(table)):
        if tol.count is not None:
            assert len(tol.ids) == tol.count, f"{tid} {tol.label}: {len(tol.ids)} rows, expected {tol.count}"


def _tolerance_items():
    """A parameter per row of every tolerance block; a known miss a strict expected failure with its reason."""
    out = []
    for tid, study, check in TRAIN:
        table = TABLES[tid]
        for tol in S.tolerances(check, list(table)):
            unknown = set(tol.known_misses) - set(tol.ids)
            assert not unknown, f"{tid} {tol.label}: known misses without a row: {sorted(unknown)}"
            for rid in tol.ids:
                pid = f"{tid}:{tol.label}:{rid}"
                marks = [pytest.mark.xfail(reason=tol.known_misses[rid], strict=True)] if rid in tol.known_misses else []
                out.append(pytest.param(table[rid], tol, id=pid, marks=marks))
    return out


@pytest.mark.parametrize("row,tol", _tolerance_items())
def test_row_within_tolerance(row, tol):
    """Every fidelity within the block's tolerance of the measured step (and the two within 1% where it asks)."""
    assert S.within(row, tol) == [], f"{row['run_id']} ({tol.label}): {'; '.join(S.within(row, tol))}"


@pytest.mark.parametrize("tid,study,check", [(t, s, c) for t, s, c in TRAIN if c.get("overheads")],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_every_overhead_has_the_measured_sign(tid, study, check):
    """DDP and FSDP cost time over one GPU doing the same per-GPU work, interleaving beats 1F1B, as measured; the
    model's sign of every such overhead is the measured one at both fidelities."""
    assert S.overhead_problems(check, TABLES[tid]) == [], f"{tid}: {S.overhead_problems(check, TABLES[tid])}"


@pytest.mark.parametrize("tid,study,check", [(t, s, c) for t, s, c in TRAIN if c.get("overhead_pairs")],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_modelled_overhead_within_each_measured_one(tid, study, check):
    assert S.overhead_pair_problems(check, TABLES[tid]) == [], f"{tid}: {S.overhead_pair_problems(check, TABLES[tid])}"


def _band_items():
    out = []
    for tid, study, check in TRAIN:
        if not check.get("band"):
            continue
        misses = check["band"].get("known_misses") or {}
        for rid in sorted(TABLES[tid]):
            p = (study, check, rid, TABLES[tid][rid])
            out.append(pytest.param(*p, id=f"{tid}:band:{rid}",
                                    marks=pytest.mark.xfail(reason=misses[rid], strict=True)) if rid in misses
                       else pytest.param(*p, id=f"{tid}:band:{rid}"))
    return out


@pytest.mark.parametrize("study,check,rid,row", _band_items())
def test_run_inside_its_committed_band(study, check, rid, row):
    """The run inside the band `run --band` gave before it, for the configuration it was made for."""
    lo, hi = S.band_of(study, check, rid, row)
    assert lo <= row["measured_s"] <= hi, f"{rid}: {row['measured_s'] * 1e3:.1f} ms outside {lo * 1e3:.1f}-{hi * 1e3:.1f}"


RANGE = _checks("run_range")
RUNS = {tid: S.range_runs(s, c) for tid, s, c in RANGE}


@pytest.mark.parametrize("tid,study,check", RANGE, ids=lambda x: x if isinstance(x, str) else "")
def test_run_range_complete(tid, study, check):
    """Each configuration ran as often as the study says, and its runs spread at least as far as it says."""
    runs = RUNS[tid]
    if check.get("counts"):
        assert {k: len(v) for k, v in runs.items()} == check["counts"], tid
    for name, span in (check.get("min_span") or {}).items():
        t = [r["measured_s"] for r in runs[name].values()]
        assert max(t) / min(t) - 1 > span, f"{tid} {name}: runs {sorted(t)} span under {100 * span:g}%"


@pytest.mark.parametrize("tid,check,name", [(t, c, n) for t, _, c in RANGE for n in c["runs"]],
                         ids=[f"{t}:{n}" for t, _, c in RANGE for n in c["runs"]])
def test_model_within_the_range_of_its_runs(tid, check, name):
    """Both fidelities within the range of the configuration's runs, widened by the check's ``widen``."""
    assert S.range_problems(RUNS[tid][name], check["widen"]) == [], \
        f"{tid} {name}: {S.range_problems(RUNS[tid][name], check['widen'])}"


#: the bar of issue 34 for the evidence bands over the project's real-GPU runs
BAND_COVERAGE, BAND_MIN_HALF, BAND_MEDIAN_HALF = 0.80, 0.01, 0.15


def _coverage() -> dict:
    return S.band_coverage()   # every run's evidence comes with its predictions above (cached per configuration)


def test_bands_are_not_too_narrow_and_not_too_wide():
    """No band under +-1%, a median half-width of at most 15%, over every real run of the studies."""
    cov = _coverage()
    assert cov["runs"] >= 200, cov["runs"]
    assert cov["min_half_width"] >= BAND_MIN_HALF, f"narrowest band +-{100 * cov['min_half_width']:.2f}%"
    assert cov["median_half_width"] <= BAND_MEDIAN_HALF, f"median band +-{100 * cov['median_half_width']:.1f}%"


def test_bands_cover_most_real_runs():
    """At least 80% of the project's real-GPU runs inside the band their evidence gives (both fidelities)."""
    cov = _coverage()
    share = cov["inside"] / cov["runs"]
    assert share >= BAND_COVERAGE, (f"{cov['inside']} of {cov['runs']} runs ({100 * share:.0f}%) inside their band; "
                                    f"outside: {cov['outside'][:8]}")


def test_the_docs_band_coverage_is_current():
    """docs/validation.md's band coverage table (the block ``gen:band-coverage``) is what the runs above give."""
    doc = (S.ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    begin, end = "<!-- gen:band-coverage -->\n", "<!-- /gen:band-coverage -->"
    assert doc.count(begin) == 1 and doc.count(end) == 1, "docs/validation.md: one gen:band-coverage block"
    shown = doc.split(begin, 1)[1].split(end, 1)[0]
    assert shown == S.band_coverage_table(), "docs/validation.md's band coverage is stale (python tools/doc_figures.py --write)"


def test_the_docs_index_is_current():
    """docs/validation.md's study index (the block ``gen:studies-table``) is what ``index_table()`` gives now.

    Last in this module: the rows' predictions above are cached per configuration, so the index reads them
    (``python tools/doc_figures.py --write`` refreshes the block).
    """
    doc = (S.ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    begin, end = "<!-- gen:studies-table -->\n", "<!-- /gen:studies-table -->"
    assert doc.count(begin) == 1 and doc.count(end) == 1, "docs/validation.md: one gen:studies-table block"
    shown = doc.split(begin, 1)[1].split(end, 1)[0]
    now = S.index_table().rstrip("\n") + "\n"
    stale = [f"- {a}\n+ {b}" for a, b in zip(shown.splitlines(), now.splitlines()) if a != b]
    assert shown == now, ("docs/validation.md's study index is stale (python tools/doc_figures.py --write):\n"
                          + "\n".join(stale[:5] or [f"{len(shown.splitlines())} rows shown, {len(now.splitlines())} now"]))
