"""Fuzzing the boundary (issue 17): files and arguments made from the schemas' shipped instances, then mutated.

Every case must end in a result (exit 0) or a clean refusal (exit 2 with one ``error:`` line),
never a traceback, within a per-case deadline and a memory ceiling for the process. The
commands run in this process (``clustersim.cli.main``) under tight budgets (``--max-memory
256MiB``, ``--max-events 50000``), so a mutation that asks for a huge but valid cluster or step
is refused up front instead of run. Examples are derandomised: CI explores the same cases every
time (no flaky failures), and a failure prints the exact input to reproduce.
"""

from __future__ import annotations

import copy
import json
import os
import resource
import tempfile
from datetime import timedelta
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from cli_inprocess import run_cli
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
LIMITS = ["--max-memory", "256MiB", "--max-events", "50000"]
MAX_RSS_BYTES = 3 * 2**30  # the whole test process, after every case
# CLUSTERSIM_FUZZ_EXAMPLES=500 CLUSTERSIM_FUZZ_RANDOM=1 explores further (new random cases each run)
SETTINGS = settings(max_examples=int(os.environ.get("CLUSTERSIM_FUZZ_EXAMPLES", "30")),
                    deadline=timedelta(seconds=30), derandomize=os.environ.get("CLUSTERSIM_FUZZ_RANDOM") != "1",
                    database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SCENARIOS = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((REPO / "scenarios").glob("*.yaml"))
             if not p.stem.startswith("study-")}
STUDIES = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((REPO / "scenarios").glob("study-*.yaml"))}
TOPOLOGIES = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((REPO / "topologies").glob("*.yaml"))}
# small profiles whole, the large measured one cut to a few entries (the schema is the same)
_H200 = yaml.safe_load((REPO / "profiles" / "hgx-h200.yaml").read_text())
_H200["collectives"] = _H200["collectives"][:3]
for _k in ("gemm_table", "attention_table", "gemm_layout_table", "memory_table"):
    _H200.get("compute", {}).get(_k, [])[3:] = []
PROFILES = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((REPO / "profiles").glob("*.yaml"))
            if p.stat().st_size < 5000 and p.name != "inputs.yaml"}
PROFILES["hgx-h200-cut"] = _H200




def check(code: int, out: str, err: str) -> None:
    """A result or a clean refusal; nothing else."""
    assert "Traceback" not in err and "Traceback" not in out, err
    assert code in (0, 2), (code, err[-2000:])
    if code == 2:  # ours ("error: file: field: rule") or click's usage error ("Error: Invalid value for ...")
        assert len([ln for ln in err.splitlines() if ln.startswith(("error:", "Error:"))]) == 1, err
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    assert peak < MAX_RSS_BYTES, peak


# ------------------------------------------------------------------------------------------------
# values and mutations
# ------------------------------------------------------------------------------------------------

NASTY_TEXT = ["1GiB", "1.5B", "-1", "yes", "on", "1:30", "0x10", "0o17", "1e999", "", " ", "null", "~", ".nan",
              "gpu[0-99999999]", "nvswitch[0-3]", "hgx-h200", "../../etc/passwd", "\x00", "é" * 3, "1e-999",
              "2026-11-25", "flow", "analytical", "all", "ring", "auto"]
values = st.recursive(
    st.one_of(st.booleans(), st.none(), st.integers(-3, 70),
              st.integers(-(10**25), 10**25), st.sampled_from([2**20, 2**24 + 1, 2**53 + 1, 10**6, 10**7]),
              st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(NASTY_TEXT),
              st.text(max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)


INTS = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 64, 96, 128, 1000, 1024, 4096, 10_000,
                                   10_001, 2**20, 2**20 + 1, 2**24, 10**9, -1]), st.integers(-2, 300))
FLOATS = st.one_of(st.sampled_from([0.0, 1e-300, 1e-9, 0.5, 1.0, 1.5, 2.0, 1e9, 1e15, 1e300, -1.0]),
                   st.floats(min_value=-10, max_value=1e6))


def same_kind(value) -> st.SearchStrategy:
    """A value of the same YAML type as ``value`` (a mutation that passes the type checks and tests the rules)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return INTS
    if isinstance(value, float):
        return FLOATS
    if isinstance(value, str):
        return st.one_of(st.sampled_from(NASTY_TEXT), st.text(max_size=12))
    return values


def paths_of(data, prefix=()) -> list[tuple]:
    """Every path of a nested dict/list (the places a mutation can hit)."""
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += paths_of(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += paths_of(v, prefix + (i,))
    return out


@st.composite
def mutated(draw, bases: dict) -> dict:
    """A shipped instance of a schema with 1-3 mutations: a value replaced, a key removed or one added."""
    data = copy.deepcopy(bases[draw(st.sampled_from(sorted(bases)))])
    for _ in range(draw(st.integers(1, 3))):
        paths = paths_of(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for k in path[:-1]:
            parent = parent[k]
        how = draw(st.sampled_from(["same-kind", "same-kind", "same-kind", "replace", "delete", "add"]))
        if how == "same-kind":
            parent[path[-1]] = draw(same_kind(parent[path[-1]]))
        elif how == "replace":
            parent[path[-1]] = draw(values)
        elif how == "delete" and isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["bogus", "layers", "gpus", "nodes", "size", "ranks"]))] = draw(values)
    return data


@st.composite
def mangled_text(draw, bases: dict) -> str:
    """YAML text of a shipped file cut, spliced or sprinkled with characters (syntax-level damage)."""
    text = yaml.safe_dump(bases[draw(st.sampled_from(sorted(bases)))], sort_keys=False)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        op = draw(st.sampled_from(["cut", "insert", "duplicate-line", "truncate"]))
        if op == "cut":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(["&a ", "*a", "{", "[", ": ", "\n- ", "\t", "'", "!!python/object:os.system ",
                                                     "9" * 50, "<<: ", "\n  x: 1\n"])) + text[i:]
        elif op == "duplicate-line":
            lines = text.splitlines(keepends=True)
            k = draw(st.integers(0, max(0, len(lines) - 1)))
            text = "".join(lines[: k + 1] + lines[k:])
        else:
            text = text[:i]
    return text


def _dump(data) -> str:
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, ValueError):  # a value PyYAML cannot write (never reached by the strategies above)
        return json.dumps(data, default=str)


# ------------------------------------------------------------------------------------------------
# the properties
# ------------------------------------------------------------------------------------------------


@SETTINGS
@given(data=mutated(SCENARIOS))
def test_mutated_scenarios_validate_and_run(data) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.yaml"
        p.write_text(_dump(data))
        code, out, err = run_cli("validate", str(p), *LIMITS)
        check(code, out, err)
        if code == 0:
            check(*run_cli("run", str(p), "--json", "--fidelity", "analytical", *LIMITS))


@SETTINGS
@given(data=mutated(TOPOLOGIES))
def test_mutated_topologies_show(data) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.yaml"
        p.write_text(_dump(data))
        check(*run_cli("topo", "show", str(p), "--json", *LIMITS))


@SETTINGS
@given(data=mutated(PROFILES))
def test_mutated_profiles_predict(data) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "p.yaml"
        p.write_text(_dump(data))
        check(*run_cli("collective", "all_reduce", "-t", "hgx-h200", "--gpus", "4", "--profile", str(p),
                       "--sizes", "1KiB:1GiB:x64", "--json", *LIMITS))


@SETTINGS
@given(data=mutated(STUDIES))
def test_mutated_studies_load_and_expand(data) -> None:
    """A study is loaded and its points listed (running them is the scenario properties' job):
    a clean refusal or a bounded list of points, also for axes whose product is huge."""
    from clustersim.errors import ClusterSimError
    from clustersim.sweep.expand import expand
    from clustersim.sweep.study import load_study

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "study.yaml"
        p.write_text(_dump(data))
        try:
            study, _ = load_study(p)
            points = expand(study)
        except ClusterSimError as exc:
            assert exc.message
        else:
            assert len(points) <= 100_000
    check(0, "", "")


@SETTINGS
@given(text=st.one_of(mangled_text(SCENARIOS), mangled_text(TOPOLOGIES), mangled_text(PROFILES),
                      mangled_text(STUDIES)))
def test_damaged_yaml_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.yaml"
        p.write_text(text)
        check(*run_cli("validate", str(p), *LIMITS))
        check(*run_cli("topo", "show", str(p), *LIMITS))


SCENARIO_KEYS = sorted({".".join(map(str, k)) for s in SCENARIOS.values() for k in paths_of(s)
                        if all(isinstance(x, str) for x in k)})
sizes = st.one_of(st.sampled_from(NASTY_TEXT), st.from_regex(r"\A-?[0-9]{0,6}(\.[0-9]{0,3})?(e-?[0-9]{1,4})?"
                                                             r"(B|KB|KiB|MiB|GiB|TB|PB|x)?\Z"))


@SETTINGS
@given(op=st.one_of(st.sampled_from(["all_reduce", "all_gather", "all_to_all", "send_recv", "barrier", "broadcast"]),
                    st.text(max_size=10)),
       topology=st.sampled_from(sorted(TOPOLOGIES) + ["nope", ""]),
       count=st.one_of(st.none(), st.sampled_from(["0", "-3", "1", "2", "3", "8", "16", "4096", "1048577", "9" * 40,
                                                    "1e3", "two"])),
       which=st.sampled_from(["--gpus", "--nodes"]),
       size=sizes, sweep=st.booleans(),
       fidelity=st.sampled_from(["analytical", "flow", "exact"]),
       algorithm=st.sampled_from(["auto", "ring", "tree", "nvls", "pairwise", "bogus"]),
       protocol=st.sampled_from(["auto", "ll", "ll128", "simple", "LL", "x"]))
def test_collective_arguments(op, topology, count, which, size, sweep, fidelity, algorithm, protocol) -> None:
    args = ["collective", op, "-t", topology, "--fidelity", fidelity, "--algorithm", algorithm, "--protocol", protocol,
            "--json", *LIMITS]
    if count is not None:
        args += [which, count]
    args += ["--sizes", f"{size}:{size}x"] if sweep else ["--size", size]
    check(*run_cli(*args))


@SETTINGS
@given(name=st.sampled_from(sorted(SCENARIOS)),
       sets=st.lists(st.tuples(st.sampled_from(SCENARIO_KEYS + ["parallelism", "x.y.z", "job.phases.0.repeat"]),
                               st.one_of(st.sampled_from(NASTY_TEXT), st.integers(-5, 10**6).map(str),
                                         st.text(max_size=8))), max_size=3))
def test_run_with_set_overrides(name: str, sets) -> None:
    args = ["run", str(REPO / "scenarios" / f"{name}.yaml"), "--json", "--fidelity", "analytical", *LIMITS]
    for key, value in sets:
        args += ["--set", f"{key}={value}"]
    check(*run_cli(*args))


row = st.dictionaries(st.sampled_from(["kind", "op", "size_bytes", "time_us", "ranks", "mode", "scope", "m", "n", "k",
                                       "bytes", "bandwidth_GBps", "overhead_us", "run_id", "gpu", "nodes", "time_s"]),
                      st.one_of(st.sampled_from(["collective", "meta", "gemm", "hbm", "launch", "comm_init",
                                                 "all_reduce", "nccl", "intra"]),
                                st.integers(-5, 2**40), st.floats(allow_nan=False, allow_infinity=False, width=32),
                                st.none(), st.booleans()),
                      max_size=9)


@SETTINGS
@given(rows=st.lists(st.one_of(row.map(json.dumps), st.text(max_size=30)), min_size=0, max_size=25))
def test_measurement_files_fit_and_report(rows) -> None:
    with tempfile.TemporaryDirectory() as d:
        m = Path(d) / "m.jsonl"
        m.write_text("\n".join(r.replace("\n", " ") for r in rows) + "\n")
        prof = Path(d) / "p.yaml"
        code, out, err = run_cli("calibrate", "fit", str(m), "-o", str(prof))
        check(code, out, err)
        check(*run_cli("calibrate", "report", str(m), "-p", str(prof) if code == 0 else "hgx-h200",
                       "-o", str(Path(d) / "rep")))
        check(*run_cli("calibrate", "import-nccl-tests", str(m), "-o", str(Path(d) / "nt.jsonl")))
