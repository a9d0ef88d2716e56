"""The validation wing's layout: one study per folder with a valid expect.yaml, no measurement stored twice.

Static checks only (no prediction): tests/integration/test_validation_studies.py runs the studies' checks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import studies as S  # noqa: E402  (tools/studies.py)

#: folders of validation/ that are not studies: the hardware probes and the launchers several studies share
NOT_STUDIES = {"probes", "launchers"}


def test_no_measurement_file_is_stored_twice():
    """Every file under validation/, profiles/measurements/ and tests/data/ is stored once (a study that uses another's
    measurement names it where it is); machine descriptions of one VM or host type (host.txt, topo-m.txt, ...) aside."""
    dups = S.duplicate_files()
    assert dups == [], f"stored more than once: {dups}"


def test_the_duplicate_check_sees_a_copy(tmp_path, monkeypatch):
    """The check finds two byte-identical measurement files (and leaves identical machine descriptions alone)."""
    for tree in S.DATA_TREES:
        (tmp_path / tree).mkdir(parents=True)
    (tmp_path / "validation" / "a.jsonl").write_text('{"x": 1}\n')
    (tmp_path / "tests" / "data" / "b.jsonl").write_text('{"x": 1}\n')
    (tmp_path / "validation" / "host.txt").write_text("cpu\n")
    (tmp_path / "tests" / "data" / "host.txt").write_text("cpu\n")
    monkeypatch.setattr(S, "ROOT", tmp_path)
    assert S.duplicate_files() == [["validation/a.jsonl", "tests/data/b.jsonl"]]


def test_every_folder_of_validation_is_a_study_or_a_probe_area():
    odd = [p.name for p in S.VALIDATION.iterdir() if p.is_dir() and p.name not in NOT_STUDIES
           and not S.STUDY_NAME.match(p.name)]
    assert odd == [], f"not validation/<topic>_<hardware>_<YYYY-MM-DD>/: {odd}"
    assert all((S.VALIDATION / "probes" / q).is_dir() for q in ("collective-startup-drift", "nvlink-store-ramp"))


@pytest.mark.parametrize("folder", S.study_dirs(), ids=[d.name for d in S.study_dirs()])
def test_every_study_has_a_valid_expect_yaml(folder):
    assert (folder / "expect.yaml").is_file(), folder.name
    study = S.load(folder)
    assert S.problems(study) == [], f"{folder.name}/expect.yaml: {S.problems(study)}"


def test_every_train_step_file_is_pooled_or_says_why_not():
    """The memory and DDP-transient tests pool every measured train_step row file (tools/studies.py TRAIN_STEP_SETS);
    a file left out is in NOT_POOLED with its reason, and every pooled file exists."""
    assert S.unlisted_train_step_files() == []
    assert [name for name, p in S.train_step_sets() if not p.is_file()] == []


def test_index_table_rows_stay_short():
    """One row per study, each under 300 characters (the checks' results computed elsewhere: the record rows here)."""
    for s in S.studies():
        if not s.checks:
            row = f"| {s.doc['date']} | {s.doc['hardware']} | [{s.doc['question']}](../validation/{s.name}/) | " \
                  f"{s.doc['result']} | {s.doc['status']} |"
            assert len(row) < S.MAX_ROW, (s.name, len(row))
