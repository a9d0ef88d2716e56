"""The validation studies: every ``validation/<topic>_<hardware>_<date>/expect.yaml``, checked and indexed.

A study folder holds one study (its README, configs, launcher, predictions, measurements) and an ``expect.yaml``
that says what the study asked, how it came out and, where the data allow it, what a test checks::

    title: "Blind set 18: the step-time band with the host's speed"
    date: 2026-11-27
    hardware: 2x H200
    question: "Does the band with the host's speed hold runs it has not seen?"
    status: partly met          # met | partly met | missed | record (a dated record, no automatic check)
    result: "..."               # required for status record; otherwise the index computes it from the check
    check:                      # one check or a list of them
      kind: train_steps         # train_steps | run_range
      measurements: [train_steps.jsonl]
      tolerance: 0.10
      known_misses: {f18-ddp2-host-r1: "why"}

``tests/integration/test_validation_studies.py`` runs every check (one parametrized test over the folders), so a new
study adds a folder and no test code. The rows of a ``train_steps`` check are the measured ``train_step`` rows of
reference/train_gpt.py; each is predicted from its scenario file and ``--set`` overrides with the topology's
shipped profile at both fidelities, nothing else read from the measurement.

Check kinds
-----------
``train_steps``
    ``measurements`` (paths relative to the folder, or repository paths), ``select`` (run ids; default every row),
    ``id`` (``run_id``, the default, or ``config``: ``scenario[overrides]``), ``strip_suffix`` (taken off run ids),
    ``rows`` (what the rows must be: ``count``, ``count_min``, ``gpus``, ``gpus_count``, ``overrides_include``,
    ``overrides_exclude``, ``scenario_contains``, ``run_ids``, ``same_ids_as``, ``scenarios_cover``, ``present``),
    ``tolerance`` with ``fidelities_agree`` and ``known_misses`` (id -> reason: strict expected failures),
    ``subchecks`` (more tolerances over all rows or the rows of some ``layouts``; ``fidelities``; ``count``),
    ``overheads`` (the sign of every parallel overhead, measured and predicted), ``overhead_pairs`` (a modelled
    overhead within ``rel`` of each measured one), ``band`` (every run inside the band committed before it).
``run_range``
    ``groups`` (name -> measurement files: one group per VM), ``runs`` (run ids), ``counts`` (runs per id),
    ``min_span`` (the runs of an id must spread at least this much), ``widen``: the model within the range of the
    id's runs, widened by that fraction.

    python tools/studies.py --table     # the index table of docs/validation.md (one row per study folder)
    python tools/studies.py --check     # every expect.yaml valid (fields, files)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "validation"
#: a study folder's name: topic, hardware, ISO date
STUDY_NAME = re.compile(r"^(?P<topic>[a-z0-9][a-z0-9.-]*)_(?P<hardware>[a-z0-9][a-z0-9.-]*)_(?P<date>\d{4}-\d{2}-\d{2})$")
STATUSES = ("met", "partly met", "missed", "record")
KINDS = ("train_steps", "run_range")
FIDELITIES = ("analytical", "flow")
#: the longest question and result the index table takes (its rows stay under 300 characters)
MAX_QUESTION, MAX_RESULT, MAX_ROW = 110, 60, 300
TOP_KEYS = {"title", "date", "hardware", "question", "status", "result", "check"}
TRAIN_STEPS_KEYS = {"kind", "measurements", "select", "id", "strip_suffix", "rows", "tolerance", "fidelities_agree",
                    "known_misses", "subchecks", "overheads", "overhead_pairs", "band", "label"}
ROWS_KEYS = {"count", "count_min", "gpus", "gpus_count", "overrides_include", "overrides_exclude",
             "scenario_contains", "run_ids", "same_ids_as", "scenarios_cover", "present"}
SUBCHECK_KEYS = {"tolerance", "layouts", "count", "fidelities", "fidelities_agree", "known_misses", "label"}
RUN_RANGE_KEYS = {"kind", "groups", "runs", "counts", "min_span", "widen", "label"}


# ---------------------------------------------------------------------------------------------------------- folders
def study_dirs() -> list[Path]:
    """Every study folder (``validation/<topic>_<hardware>_<date>/``), sorted by name."""
    return sorted(p for p in VALIDATION.iterdir() if p.is_dir() and STUDY_NAME.match(p.name))


def repo_path(folder: Path, rel: str) -> Path:
    """A measurement path of ``folder``'s expect.yaml: repository-relative when it starts with a top folder of the
    repository (``validation/``, ``profiles/``, ``tests/``), else relative to the study folder."""
    return ROOT / rel if rel.split("/", 1)[0] in ("validation", "profiles", "tests") else folder / rel


@dataclass
class Study:
    """One study folder and its expect.yaml."""

    folder: Path
    doc: dict

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def checks(self) -> list[dict]:
        c = self.doc.get("check")
        return [] if c is None else list(c) if isinstance(c, list) else [c]


def load(folder: Path) -> Study:
    """The study of ``folder`` (its expect.yaml read, not yet validated: :func:`problems`)."""
    return Study(folder, yaml.safe_load((folder / "expect.yaml").read_text(encoding="utf-8")) or {})


def studies() -> list[Study]:
    return [load(d) for d in study_dirs()]


def problems(study: Study) -> list[str]:
    """What is wrong with ``study``'s expect.yaml: fields missing, unknown or malformed, files missing."""
    d, out = study.doc, []
    m = STUDY_NAME.match(study.name)
    if not m:
        return [f"{study.name}: not a <topic>_<hardware>_<YYYY-MM-DD> folder name"]
    out += [f"unknown key {k}" for k in sorted(set(d) - TOP_KEYS)]
    out += [f"no {k}" for k in ("title", "date", "hardware", "question", "status") if not d.get(k)]
    if str(d.get("date")) != m["date"]:
        out.append(f"date {d.get('date')} is not the folder's {m['date']}")
    if d.get("status") not in STATUSES:
        out.append(f"status {d.get('status')!r} is not one of {', '.join(STATUSES)}")
    if d.get("status") == "record" and study.checks:
        out.append("status record means no automatic check, but it has one")
    if not study.checks and not d.get("result"):
        out.append("no check, so it needs a result")
    if len(str(d.get("question", ""))) > MAX_QUESTION:
        out.append(f"question over {MAX_QUESTION} characters")
    if len(str(d.get("result", ""))) > MAX_RESULT:
        out.append(f"result over {MAX_RESULT} characters")
    for i, c in enumerate(study.checks):
        out += [f"check[{i}]: {p}" for p in _check_problems(study, c)]
    return out


def _check_problems(study: Study, c: dict) -> list[str]:
    kind = c.get("kind")
    if kind not in KINDS:
        return [f"kind {kind!r} is not one of {', '.join(KINDS)}"]
    out: list[str] = []
    if kind == "run_range":
        out += [f"unknown key {k}" for k in sorted(set(c) - RUN_RANGE_KEYS)]
        out += [f"no {k}" for k in ("groups", "runs", "widen") if k not in c]
        files = [f for fs in (c.get("groups") or {}).values() for f in fs]
    else:
        out += [f"unknown key {k}" for k in sorted(set(c) - TRAIN_STEPS_KEYS)]
        out += [f"rows: unknown key {k}" for k in sorted(set(c.get("rows") or {}) - ROWS_KEYS)]
        if not c.get("measurements"):
            out.append("no measurements")
        if c.get("id", "run_id") not in ("run_id", "config"):
            out.append(f"id {c.get('id')!r} is not run_id or config")
        if not any(k in c for k in ("tolerance", "subchecks", "overheads", "overhead_pairs", "band")):
            out.append("nothing to check (no tolerance, subchecks, overheads, overhead_pairs or band)")
        for j, s in enumerate(c.get("subchecks") or []):
            out += [f"subchecks[{j}]: unknown key {k}" for k in sorted(set(s) - SUBCHECK_KEYS)]
            if "tolerance" not in s:
                out.append(f"subchecks[{j}]: no tolerance")
        files = list(c.get("measurements") or [])
        if c.get("band"):
            files.append(c["band"]["predictions"])
        other = (c.get("rows") or {}).get("same_ids_as")
        if other and not (VALIDATION / other / "expect.yaml").is_file():
            out.append(f"rows.same_ids_as: no study {other}")
    out += [f"{f}: missing" for f in files if not repo_path(study.folder, f).is_file()]
    return out


# ---------------------------------------------------------------------------------------------------------- rows
def read_rows(path: Path, select: list[str] | None = None) -> list[dict]:
    """The ``train_step`` rows of ``path`` that ran (status ok), as the checks use them: file, run id, scenario,
    overrides, GPUs, measured step seconds (the median of the timed steps); only run ids in ``select`` if given."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("kind") != "train_step" or r.get("status") != "ok":
            continue
        if select is not None and r.get("run_id") not in select:
            continue
        rows.append({"file": path.name, "run_id": r.get("run_id"), "scenario": r["scenario"],
                     "overrides": list(r["overrides"]), "gpus": r["world_size"], "measured_s": float(r["step_time_s"]),
                     "scenario_file": scenario_path(r)})
    return rows


def scenario_path(r: dict) -> str:
    """The scenario file a measured row ran, relative to the repository: the shipped ``scenarios/<name>.yaml``, or
    the study's own configuration file the row names (``scenario_file``) when it is not a shipped scenario."""
    f = r.get("scenario_file") or ""
    if f and not f.startswith(("/", "scenarios/")) and (ROOT / f).is_file():
        return f
    return f"scenarios/{r['scenario']}.yaml"


def config_key(row: dict) -> tuple:
    return row["scenario"], tuple(sorted(row["overrides"]))


def config_id(row: dict) -> str:
    return row["scenario"] + ("[" + ",".join(config_key(row)[1]) + "]")


def check_rows(study: Study, check: dict) -> dict[str, dict]:
    """``{id: row}`` of a ``train_steps`` check, in the order of its files (a later row of the same id wins)."""
    sel = check.get("select")
    out: dict[str, dict] = {}
    for rel in check["measurements"]:
        for r in read_rows(repo_path(study.folder, rel), sel):
            out[row_id(check, r)] = r
    return out


def row_id(check: dict, row: dict) -> str:
    if check.get("id") == "config":
        return config_id(row)
    rid = str(row["run_id"])
    suffix = check.get("strip_suffix")
    return rid.removesuffix(suffix) if suffix else rid


_PREDICTED: dict = {}
#: per configuration and fidelity, the run's ``evidence`` (clustersim.simulate.evidence): its band and classes
_EVIDENCE: dict = {}


def predict(row: dict) -> dict[str, float]:
    """Step seconds of ``row``'s configuration at both fidelities (cached per configuration, with the runs'
    evidence: :func:`evidence`)."""
    from clustersim.config.base import load_model
    from clustersim.config.scenario import Scenario
    from clustersim.simulate.run import run_scenario

    from clustersim.simulate.band import with_host_evidence
    from clustersim.simulate.resolve import resolve_scenario

    k = config_key(row)
    if k not in _PREDICTED:
        sc = load_model(Scenario, ROOT / row.get("scenario_file", f"scenarios/{row['scenario']}.yaml"), row["overrides"])
        rs = resolve_scenario(sc)
        runs = {f: run_scenario(rs, fidelity=f) for f in FIDELITIES}
        _PREDICTED[k] = {f: r.step_time_s for f, r in runs.items()}
        # the evidence as `clustersim run` gives it: the host's share measured once (analytical), both fidelities
        e = with_host_evidence(runs["analytical"], rs).evidence["host_elasticity"]
        _EVIDENCE[k] = {f: with_host_evidence(r, rs, elasticity=e).evidence for f, r in runs.items()}
    return _PREDICTED[k]


def evidence(row: dict) -> dict[str, dict]:
    """``{fidelity: evidence}`` of ``row``'s configuration (:func:`predict` runs it once)."""
    predict(row)
    return _EVIDENCE[config_key(row)]


# ---------------------------------------------------------------------------------------------------------- checks
@dataclass
class Tolerance:
    """One tolerance block of a ``train_steps`` check: which rows, how close, which are known misses."""

    label: str
    tolerance: float
    ids: list[str]
    fidelities: tuple[str, ...] = FIDELITIES
    fidelities_agree: bool = False
    known_misses: dict[str, str] = field(default_factory=dict)
    count: int | None = None


def layout_ids(ids, layouts) -> list[str]:
    """The ids whose part after the shape (``rg-ddp2`` -> ``ddp2``) is one of ``layouts``."""
    return [n for n in ids if n.split("-", 1)[-1] in layouts]


def tolerances(check: dict, ids: list[str]) -> list[Tolerance]:
    """The tolerance blocks of a ``train_steps`` check over its row ids: the main one, then every subcheck."""
    out = []
    if "tolerance" in check:
        out.append(Tolerance(check.get("label", f"within {100 * check['tolerance']:g}%"), float(check["tolerance"]),
                             list(ids), fidelities_agree=bool(check.get("fidelities_agree")),
                             known_misses=dict(check.get("known_misses") or {})))
    for s in check.get("subchecks") or []:
        sel = layout_ids(ids, s["layouts"]) if s.get("layouts") else list(ids)
        label = s.get("label") or (f"within {100 * s['tolerance']:g}%"
                                   + (f" ({', '.join(s['layouts'])})" if s.get("layouts") else ""))
        out.append(Tolerance(label, float(s["tolerance"]), sel, tuple(s.get("fidelities") or FIDELITIES),
                             bool(s.get("fidelities_agree")), dict(s.get("known_misses") or {}), s.get("count")))
    return out


def within(row: dict, tol: Tolerance) -> list[str]:
    """Why ``row`` misses ``tol`` (empty: it is within): each fidelity's relative error, and the two fidelities' gap."""
    p, out = predict(row), []
    for fid in tol.fidelities:
        err = p[fid] / row["measured_s"] - 1
        if abs(err) > tol.tolerance:
            out.append(f"{fid} {p[fid] * 1e3:.2f} ms against {row['measured_s'] * 1e3:.2f} measured: {100 * err:+.1f}%"
                       f" (tolerance {100 * tol.tolerance:g}%)")
    if tol.fidelities_agree and abs(p["flow"] / p["analytical"] - 1) > 0.01:
        out.append(f"flow {p['flow'] * 1e3:.2f} ms and analytical {p['analytical'] * 1e3:.2f} ms differ by more than 1%")
    return out


def rows_problems(study: Study, check: dict, table: dict[str, dict]) -> list[str]:
    """What the check's ``rows`` expectation finds wrong with the measured rows (empty: complete)."""
    want, out = check.get("rows") or {}, []
    rows = list(table.values())
    if "count" in want and len(rows) != want["count"]:
        out.append(f"{len(rows)} rows, expected {want['count']}")
    if "count_min" in want and len(rows) < want["count_min"]:
        out.append(f"{len(rows)} rows, expected at least {want['count_min']}")
    for r in rows:
        if "gpus" in want and r["gpus"] != want["gpus"]:
            out.append(f"{r['run_id']}: {r['gpus']} GPUs, expected {want['gpus']}")
        if "overrides_include" in want and want["overrides_include"] not in r["overrides"]:
            out.append(f"{r['run_id']}: no {want['overrides_include']}")
        if "overrides_exclude" in want and want["overrides_exclude"] in r["overrides"]:
            out.append(f"{r['run_id']}: {want['overrides_exclude']}")
        if "scenario_contains" in want and want["scenario_contains"] not in r["scenario"]:
            out.append(f"{r['run_id']}: scenario {r['scenario']} without {want['scenario_contains']}")
    for gpus, n in (want.get("gpus_count") or {}).items():
        got = sum(r["gpus"] == int(gpus) for r in rows)
        if got != n:
            out.append(f"{got} rows on {gpus} GPUs, expected {n}")
    if "run_ids" in want and sorted(table) != sorted(want["run_ids"]):
        out.append(f"ids {sorted(table)}, expected {sorted(want['run_ids'])}")
    if "same_ids_as" in want:
        other = load(VALIDATION / want["same_ids_as"])
        theirs = set(check_rows(other, other.checks[0]))
        if set(table) != theirs:
            out.append(f"ids differ from {want['same_ids_as']}: {sorted(set(table) ^ theirs)}")
    if "scenarios_cover" in want:
        expected = {p.stem for p in (ROOT / "scenarios").glob(want["scenarios_cover"])}
        missing = expected - {r["scenario"] for r in rows}
        if missing:
            out.append(f"no row of {sorted(missing)}")
    for pat in want.get("present") or []:
        if not any(r["scenario"] == pat["scenario"] and ("gpus" not in pat or r["gpus"] == pat["gpus"])
                   and all(any(s in o for o in r["overrides"]) for s in _list(pat.get("overrides_include")))
                   and not any(s in o for s in _list(pat.get("overrides_exclude")) for o in r["overrides"])
                   for r in rows):
            out.append(f"no row like {pat}")
    return out


def _list(x) -> list:
    return [] if x is None else list(x) if isinstance(x, list) else [x]


def overheads(spec: dict, times: dict[str, float]) -> dict[str, float]:
    """Seconds of parallel overhead: each DDP / FSDP row's step minus its one-GPU baseline of the same per-GPU work
    (``baselines``: shape -> [one-GPU run, the share of its work per rank]), and each ``interleaved_vs_1f1b`` pair's
    interleaved minus 1F1B step."""
    out = {}
    for name in times:
        shape, kind = (name.split("-", 1) + [""])[:2]
        if kind in ("ddp2", "fsdp2") and shape in spec["baselines"]:
            base, share = spec["baselines"][shape]
            out[name] = times[name] - share * times[base]
    for name, (inter, onef) in (spec.get("interleaved_vs_1f1b") or {}).items():
        out[name] = times[inter] - times[onef]
    return out


def overhead_problems(check: dict, table: dict[str, dict]) -> list[str]:
    """Every overhead positive and every interleaved-vs-1F1B gain negative as measured, and the model's signs the
    measured ones at both fidelities."""
    spec, out = check["overheads"], []
    measured = overheads(spec, {n: r["measured_s"] for n, r in table.items()})
    inter = set(spec.get("interleaved_vs_1f1b") or {})
    for k, v in measured.items():
        if (v > 0) == (k in inter):
            out.append(f"measured {k} {v * 1e3:+.1f} ms has the unexpected sign")
    for fid in FIDELITIES:
        pred = overheads(spec, {n: predict(r)[fid] for n, r in table.items()})
        for k, v in measured.items():
            if (pred[k] > 0) != (v > 0):
                out.append(f"{fid}: {k} predicted {pred[k] * 1e3:+.1f} ms, measured {v * 1e3:+.1f} ms")
    return out


def overhead_pair_problems(check: dict, table: dict[str, dict]) -> list[str]:
    """The modelled overhead (``model``: [run, baseline]) positive and within ``rel`` of every measured pair's."""
    spec, out = check["overhead_pairs"], []
    run, base = spec["model"]
    for fid in FIDELITIES:
        model = predict(table[run])[fid] - predict(table[base])[fid]
        for a, b in spec["measured"]:
            measured = table[a]["measured_s"] - table[b]["measured_s"]
            if not (model > 0 and measured > 0) or abs(model / measured - 1) > spec["rel"]:
                out.append(f"{fid}: model {model * 1e3:+.2f} ms against {a} - {b} {measured * 1e3:+.2f} ms "
                           f"(within {100 * spec['rel']:g}%)")
    return out


def band_of(study: Study, check: dict, rid: str, row: dict) -> tuple[float, float]:
    """The band committed for ``row``'s configuration before it ran (its predictions' key: the run id without its
    ``-rN`` round tag), checked to be the configuration that ran."""
    spec = check["band"]
    pred = json.loads(repo_path(study.folder, spec["predictions"]).read_text(encoding="utf-8"))[rid.rsplit("-r", 1)[0]]
    assert (pred["scenario"], pred["overrides"]) == (row.get("scenario_file", f"scenarios/{row['scenario']}.yaml"),
                                                     row["overrides"]), rid
    lo, hi = pred["predicted_band_s"][spec.get("fidelity", "analytical")]
    return lo, hi


def range_runs(study: Study, check: dict) -> dict[str, dict[str, dict]]:
    """``{run id: {group: row}}`` of a ``run_range`` check (a later row of a group wins)."""
    out: dict[str, dict[str, dict]] = {}
    for group, files in check["groups"].items():
        for rel in files:
            for r in read_rows(repo_path(study.folder, rel)):
                if r["run_id"] in check["runs"]:
                    out.setdefault(r["run_id"], {})[group] = r
    return out


def range_problems(runs: dict[str, dict], widen: float) -> list[str]:
    """The model of the runs' configuration (any run's: they share it) at both fidelities within their range."""
    times = [r["measured_s"] for r in runs.values()]
    row = next(iter(runs.values()))
    return [f"{fid} {t * 1e3:.1f} ms outside {min(times) * 1e3:.1f}-{max(times) * 1e3:.1f} ms widened by "
            f"{100 * widen:g}%" for fid, t in predict(row).items()
            if not (1 - widen) * min(times) <= t <= (1 + widen) * max(times)]


# ---------------------------------------------------------------------------------------------------------- bands
def real_runs() -> list[tuple[str, str, dict]]:
    """(study, run, row) of every real-GPU run of the studies: each ``train_steps`` row and each group's run of a
    ``run_range`` check (one row per VM)."""
    out = []
    for s in studies():
        for c in s.checks:
            if c.get("kind") == "train_steps":
                out += [(s.name, rid, r) for rid, r in check_rows(s, c).items()]
            elif c.get("kind") == "run_range":
                out += [(s.name, f"{rid}@{g}", r) for rid, groups in range_runs(s, c).items() for g, r in groups.items()]
    return out


def band_coverage() -> dict:
    """How the evidence bands (``run --json``'s ``evidence.band``) hold every real run: a run is inside when the
    band of each fidelity holds its measured step. Per evidence class (the class most of the step rests on):
    runs and runs inside; the half-widths' smallest and median (fractions)."""
    rows, per = [], {}
    for study, rid, row in real_runs():
        ev = evidence(row)
        inside = all(e["band"]["step_time_s"][0] <= row["measured_s"] <= e["band"]["step_time_s"][1] for e in ev.values())
        half = ev["analytical"]["band"]["half_width"]
        cls = max(ev["analytical"]["step"].items(), key=lambda kv: kv[1])[0]
        rows.append((study, rid, inside, half, cls))
        n, k = per.get(cls, (0, 0))
        per[cls] = (n + 1, k + int(inside))
    halves = sorted(r[3] for r in rows)
    return {"runs": len(rows), "inside": sum(r[2] for r in rows), "min_half_width": halves[0],
            "median_half_width": halves[len(halves) // 2] if len(halves) % 2 else
            (halves[len(halves) // 2 - 1] + halves[len(halves) // 2]) / 2,
            "per_class": per, "outside": [(s, r) for s, r, i, _, _ in rows if not i]}


def band_coverage_table() -> str:
    """The docs table of :func:`band_coverage`: per evidence class, the real runs and how many their band holds."""
    cov = band_coverage()
    lines = ["| evidence the step rests on (most of it) | real runs | inside the band | share |", "|---|---|---|---|"]
    for cls, (n, k) in sorted(cov["per_class"].items()):
        lines.append(f"| {cls} | {n} | {k} | {100 * k / n:.0f}% |")
    lines.append(f"| **all** | {cov['runs']} | {cov['inside']} | {100 * cov['inside'] / cov['runs']:.0f}% |")
    lines.append("")
    lines.append(f"Half-width of the bands: smallest {100 * cov['min_half_width']:.1f}%, median "
                 f"{100 * cov['median_half_width']:.1f}%.")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------- index
def result(study: Study) -> str:
    """The study's result for the index: computed from its first check, else its ``result`` field."""
    if not study.checks:
        return str(study.doc["result"])
    c = study.checks[0]
    if c["kind"] == "run_range":
        runs = range_runs(study, c)
        ok = sum(not range_problems(v, c["widen"]) for v in runs.values())
        return f"{ok} of {len(runs)} within their runs' range"
    table = check_rows(study, c)
    parts = []
    if c.get("band"):
        inside = 0
        for rid, r in table.items():
            lo, hi = band_of(study, c, rid, r)
            inside += lo <= r["measured_s"] <= hi
        parts.append(f"{inside} of {len(table)} in their committed band")
    tols = tolerances(c, list(table))
    if tols:
        t = tols[0]
        ok = sum(not within(table[i], t) for i in t.ids)
        parts.append(f"{ok} of {len(t.ids)} within {100 * t.tolerance:g}%")
    if c.get("overhead_pairs"):
        spec = c["overhead_pairs"]
        ok = sum(not overhead_pair_problems({"overhead_pairs": {**spec, "measured": [pair]}}, table)
                 for pair in spec["measured"])
        parts.append(f"overhead within {100 * spec['rel']:g}% of {ok} of {len(spec['measured'])} runs")
    return "; ".join(parts) if parts else str(study.doc.get("result", "overhead signs checked"))


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def index_table() -> str:
    """The Markdown table of every study folder, by date: date, hardware, question (linked to the folder), result, status.

    The link is relative to docs/ (the table is docs/validation.md's index)."""
    lines = ["| date | hardware | question | result | status |", "|---|---|---|---|---|"]
    for s in sorted(studies(), key=lambda s: (str(s.doc["date"]), s.name)):
        d = s.doc
        q = f"[{_cell(d['question'])}](../validation/{s.name}/)"
        row = f"| {d['date']} | {_cell(d['hardware'])} | {q} | {_cell(result(s))} | {d['status']} |"
        if len(row) > MAX_ROW:
            raise ValueError(f"{s.name}: index row of {len(row)} characters (at most {MAX_ROW})")
        lines.append(row)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------- pools
#: Every measured ``train_step`` row file by its set name, in the order the pool was first collected (the raw folders by
#: name, then blind set 6's rows rebuilt from its logs): where a configuration repeats, its first row stands for it.
#: The set name is what tests key a set's repeats and known misses by (``rg-ddp2@blind9``).
TRAIN_STEP_SETS = {
    "fp8-moe": "validation/fp8-moe-1gpu_h200_2026-12-02/train_steps.jsonl",
    "fp8-moe-r2": "validation/fp8-moe-1gpu_h200_2026-12-02/train_steps-r2.jsonl",
    "fp8-moe-r3": "validation/fp8-moe-1gpu_h200_2026-12-02/train_steps-r3.jsonl",
    "blind10": "validation/blind10_h100x4_2026-11-27/train_steps.jsonl",
    "blind11": "validation/blind11-fsdp2-skew_h100x2_2026-11-27/train_steps.jsonl",
    "blind12": "validation/blind12-4gpu_h100x4_2026-11-27/train_steps.jsonl",
    "blind13": "validation/blind13-pipelines_h200x4_2026-11-27/train_steps.jsonl",
    "blind14": "validation/blind14-interleaved_h200x4_2026-11-27/train_steps.jsonl",
    "blind15": "validation/blind15-memory_h100x2-h200x2_2026-11-27/train_steps.jsonl",
    "blind15-h200": "validation/blind15-memory_h100x2-h200x2_2026-11-27/h200/train_steps.jsonl",
    "blind16": "validation/blind16-memory-4gpu_h100x4_2026-11-27/train_steps.jsonl",
    "blind17": "validation/blind17-fsdp2_h200x2_2026-11-27/train_steps.jsonl",
    "blind17-b": "validation/blind17-fsdp2_h200x2_2026-11-27/b/train_steps.jsonl",
    "blind18": "validation/blind18-host-band_h200x2_2026-11-27/train_steps.jsonl",
    "blind2": "validation/blind2_h200-h100_2026-11-24/train_steps.jsonl",
    "blind3": "validation/blind3_h200-h100_2026-11-24/train_steps.jsonl",
    "blind4": "validation/blind4_h200-h100_2026-11-24/train_steps.jsonl",
    "blind6": "validation/blind6-2gpu-overheads_h100x2_2026-11-26/train_steps.jsonl",
    "blind7": "validation/blind7_h100x2_2026-11-26/train_steps.jsonl",
    "blind8": "validation/blind8-4gpu_h200x4_2026-11-26/train_steps.jsonl",
    "blind9": "validation/blind9_h200x2_2026-11-26/train_steps.jsonl",
    "ddp-steps": "validation/ddp-step2-transient_h200x2_2026-11-27/ddp-steps/train_steps.jsonl",
    "ddp-transient": "validation/ddp-step2-transient_h200x2_2026-11-27/ddp-transient/train_steps.jsonl",
    "fsdp16": "validation/fsdp16-host-width_h200x2_2026-11-27/train_steps.jsonl",
    "h100": "validation/host-bound-reference_h200-h100_2026-11-22/h100/train_steps.jsonl",
    "h200x2": "validation/host-bound-reference_h200-h100_2026-11-22/h200x2/train_steps.jsonl",
    "h200x4": "validation/host-bound-reference_h200-h100_2026-11-22/h200x4/train_steps.jsonl",
    "heldout": "validation/heldout-kernel-classes_h200x2_2026-11-22/train_steps.jsonl",
    "host": "validation/host-cost-1gpu_h200-h100_2026-11-24/train_steps.jsonl",
    "host19": "validation/host19-ddp-host_h200x2_2026-11-27/train_steps.jsonl",
    "host7": "validation/host7-fsdp2-hook_h100x2_2026-11-26/train_steps.jsonl",
    "host8": "validation/host8-fsdp2-hook-h200_h200x4_2026-11-26/train_steps.jsonl",
    "host9": "validation/host9-fsdp2-rank-skew_h200x4_2026-11-26/train_steps.jsonl",
    "hostcpu17-h100": "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h100/train_steps.jsonl",
    "hostcpu17-h200": "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h200/train_steps.jsonl",
    "hostcpu17-h200b": "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h200b/train_steps.jsonl",
    "hostprobe18-h200": "validation/hostprobe18-host-speed_h200x2_2026-11-27/train_steps.jsonl",
    "hostprobe18-h200b": "validation/hostprobe18-host-speed_h200x2_2026-11-27/b/train_steps.jsonl",
    "hostprobe18-h200c": "validation/hostprobe18-host-speed_h200x2_2026-11-27/c/train_steps.jsonl",
    "memory": "validation/memory-peak_h100_2026-11-25/train_steps.jsonl",
    "memory-blind": "validation/memory-blind_h100_2026-11-25/train_steps.jsonl",
    "skew11": "validation/blind11-fsdp2-skew_h100x2_2026-11-27/skew/train_steps.jsonl",
    "sync-spin-h200": "validation/probes/sync-spin-host/train_steps.jsonl",
    "blind6-rows": "validation/blind6-2gpu-overheads_h100x2_2026-11-26/train_steps-rows.jsonl",
}
#: train_step row files kept out of the pool, with why
NOT_POOLED = {
    "validation/blind15-memory_h100x2-h200x2_2026-11-27/diag/train_steps.jsonl":
        "diagnostic re-runs of blind set 15's FSDP2 rows for the optimizer's host window (profiles/fsdp_hook.py reads them)",
    "validation/ddp-step2-transient_h200x2_2026-11-27/ddp-rebuild/memhist/train_steps.jsonl":
        "runs under the allocator's event history (train_gpt.py --memory-history), for its trace, not their peaks",
}


def train_step_sets() -> list[tuple[str, Path]]:
    """(set name, file) of every pooled train_step row file (:data:`TRAIN_STEP_SETS`)."""
    return [(name, ROOT / rel) for name, rel in TRAIN_STEP_SETS.items()]


def unlisted_train_step_files() -> list[str]:
    """Train-step row files under validation/ in neither :data:`TRAIN_STEP_SETS` nor :data:`NOT_POOLED`."""
    known = set(TRAIN_STEP_SETS.values()) | set(NOT_POOLED)
    return [str(p.relative_to(ROOT)) for p in sorted(VALIDATION.rglob("train_steps*.jsonl"))
            if str(p.relative_to(ROOT)) not in known]


#: machine descriptions (``nvidia-smi``, ``nvidia-smi topo -m``, versions, the host's CPU): several studies ran on one
#: VM or one host type, so theirs can be byte-identical; each study keeps its own
DESCRIPTOR = re.compile(r"^(host\d*|topo-m|versions|nvidia-smi(-[a-z])?|gpus(-[a-z0-9]+)?|[a-z0-9]+-gpus)\.txt$")
#: the trees where no measurement may be stored twice
DATA_TREES = ("validation", "profiles/measurements", "tests/data")


def duplicate_files() -> list[list[str]]:
    """Groups of byte-identical files under :data:`DATA_TREES` (machine descriptions aside): each group a file stored
    more than once."""
    by_hash: dict[str, list[str]] = {}
    for tree in DATA_TREES:
        for p in sorted((ROOT / tree).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and not DESCRIPTOR.match(p.name):
                by_hash.setdefault(hashlib.sha1(p.read_bytes()).hexdigest(), []).append(str(p.relative_to(ROOT)))
    return [v for v in by_hash.values() if len(v) > 1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", action="store_true", help="print the index table (one row per study folder)")
    ap.add_argument("--check", action="store_true", help="check every expect.yaml (fields, files), exit 1 on a problem")
    a = ap.parse_args(argv)
    if a.table:
        print(index_table())
        return 0
    bad = 0
    for s in studies():
        for p in problems(s):
            print(f"{s.name}: {p}")
            bad += 1
    print(f"{len(study_dirs())} studies, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
