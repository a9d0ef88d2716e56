"""The published development set (validation/published-devset_h100-b200-gb200_2026-12-02): issue 32's targets.

29 published runs of Megatron-Bridge, NeMo and torchtitan on H100, B200 and GB200 (8 to 1,024 GPUs), none of them a
row of the other studies, each with its source, its conversion to a step time and every assumed value (rows.yaml of
the folder). Three kinds of test:

* the set itself: at least 20 expressible rows, each with a source, a conversion that gives its step time and its
  assumptions; every expressible row has a scenario file, every row that is not has its reason and none;
* the committed predictions (predictions.json) are what the code gives now, row by row (analytical fidelity, ~12 s of
  CPU for the 29 rows; the flow fidelity is not run: it takes minutes on the 512- and 1,024-GPU rows). After a model
  change, ``python validation/published-devset_h100-b200-gb200_2026-12-02/devset.py predict`` rewrites the file and
  the README's table is remade from it;
* the targets, on those predictions: step-time MAPE <= 15% over every row and memory <= 3% on every row that
  publishes memory. Today's values miss both; they are strict expected failures whose reason states the value at
  the time of writing, so the test fails (XPASS) once the model meets a target and the marker must be removed.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import pytest
from checks import assert_close

STUDY = Path(__file__).resolve().parents[2] / "validation" / "published-devset_h100-b200-gb200_2026-12-02"
_spec = importlib.util.spec_from_file_location("published_devset", STUDY / "devset.py")
D = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(D)

ROWS = D.rows()
COMMITTED = D.committed()


def test_the_set_has_twenty_expressible_rows_with_sources_and_assumptions():
    assert len(ROWS) >= 20, f"{len(ROWS)} expressible rows (issue 32 asks for 20 or more)"
    assert len({r["id"] for r in ROWS}) == len(ROWS), "row ids repeat"
    for r in ROWS:
        src = r["source"]
        assert src.get("section") and (src.get("page") or (src.get("repo") and src.get("path")
                                                           and len(src.get("commit", "")) == 40)), \
            f"{r['id']}: source without a page or a repository, path and commit: {src}"
        assert r["assumed"] and all(isinstance(a, str) and a for a in r["assumed"]), f"{r['id']}: no assumptions"
        assert (STUDY / r["config"]).is_file(), f"{r['id']}: no scenario file {r['config']}"
        lay, pub = r["layout"], r["published"]
        # the published tokens/s/GPU as a step: every token of the global batch over the cluster's rate
        assert_close(r["step_time_s"], lay["GBS"] * lay["seq"] / (pub["value"] * r["gpus"]), rel=1e-5,
                     what=f"{r['id']} step from its conversion ({r['conversion']})", unit="s",
                     names=("recorded", "converted"))
        assert set(r["groups"]) <= set(D.GROUPS), f"{r['id']}: unknown groups {set(r['groups']) - set(D.GROUPS)}"
    configs = {p.stem for p in (STUDY / "configs").glob("*.yaml")}
    assert configs == {r["id"] for r in ROWS}, f"scenario files without a row or rows without one: " \
        f"{sorted(configs ^ {r['id'] for r in ROWS})}"
    for r in D.not_expressible():
        assert r["not_expressible"] and r["source"].get("section"), f"{r['id']}: no reason or source"
        assert r["id"] not in configs, f"{r['id']} is listed as not expressible but has a scenario file"


def test_the_files_are_what_make_configs_writes():
    """configs/ and rows.yaml are generated from one table (make_configs.py ROWS): no hand edit drifts from it."""
    spec = importlib.util.spec_from_file_location("published_devset_make", STUDY / "make_configs.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    for rel, text in mk.files().items():
        assert (STUDY / rel).read_text(encoding="utf-8") == text, f"{rel} differs from make_configs.py (re-run it)"


@cache
def _now(rid: str) -> dict:
    (row,) = [r for r in ROWS if r["id"] == rid]
    return D.predict_row(row)


@pytest.mark.parametrize("rid", [r["id"] for r in ROWS])
def test_committed_prediction_is_what_the_code_gives_now(rid):
    """A model change that moves a row fails here until predictions.json (and the README's table) is remade."""
    now, then = _now(rid), COMMITTED[rid]
    assert_close(now["step_time_s"], then["step_time_s"], rel=1e-9, what=f"{rid} step (devset.py predict rewrites "
                 f"predictions.json)", unit="s", names=("now", "committed"))
    assert_close(now["memory"]["reserved_estimate_bytes"], then["memory"]["reserved_estimate_bytes"], rel=1e-9,
                 what=f"{rid} memory", unit="B", names=("now", "committed"))


STEP_MAPE_NOW = D.mape(D.step_errors(COMMITTED).values())
MEMORY_NOW = D.memory_errors(COMMITTED)


@pytest.mark.xfail(strict=True, reason="2026-12-02: MAPE 42.9% over 29 rows, 28 of them too fast (the lead's model "
                   "work of issue 32 targets it; the study README groups the errors by cause)")
def test_step_time_mape_within_15_percent():
    err = D.step_errors(COMMITTED)
    worst = sorted(err.items(), key=lambda kv: -abs(kv[1]))[:5]
    assert STEP_MAPE_NOW <= D.STEP_MAPE_TARGET, f"MAPE {STEP_MAPE_NOW:.1%} over {len(err)} rows; worst: " + \
        ", ".join(f"{k} {v:+.1%}" for k, v in worst)


@pytest.mark.xfail(strict=True, reason="2026-12-02: the three torchtitan rows that publish memory (max reserved) are "
                   "-43.1%, -39.5% and -38.7% (70B on 256 H100, with AsyncTP; 8B at 32k)")
def test_memory_within_3_percent_where_published():
    assert MEMORY_NOW, "no row publishes memory"
    bad = {k: v for k, v in MEMORY_NOW.items() if abs(v) > D.MEMORY_TARGET}
    assert not bad, ", ".join(f"{k} {v:+.1%}" for k, v in bad.items())


def test_predictions_were_made_from_a_recorded_commit():
    meta = COMMITTED["_meta"]
    assert meta["fidelity"] == "analytical" and meta["clustersim_commit"], meta
    assert set(COMMITTED) - {"_meta"} == {r["id"] for r in ROWS}, "predictions.json rows differ from rows.yaml"
