"""Issue 17, "Garbage accepted": strict types at the boundary, and inputs that were silently coerced or dropped."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conftest import REPO, SCENARIO, cli, write_scenario

NT_LOG = REPO / "tests" / "data" / "h200x2" / "nt_all_reduce.txt"


def test_duplicate_keys_name_both_lines(tmp_path: Path) -> None:
    text = ("name: x\ncluster:\n  topology: hgx-h200\n  gpus: 2\n  gpus: 4\nmodel: {preset: gpt-1b}\n"
            "parallelism: {dp: 2}\n")
    p = write_scenario(tmp_path / "s.yaml", text=text)
    cli("validate", str(p)).refused(str(p), "cluster.gpus", "duplicate key 'gpus' on lines 4 and 5")


@pytest.mark.parametrize("section,key,value,needle", [
    ("cluster", "gpus", True, "valid integer, got true (a boolean)"),          # ran as 1 GPU
    ("cluster", "p2p", "yes", "valid boolean, got 'yes' (a string)"),          # was true
    ("cluster", "gpus", "2", "valid integer, got '2' (a string)"),             # was coerced to 2
    ("model", "layers", 16.0, "valid integer, got 16.0"),                      # was coerced to 16
    ("parallelism", "zero", True, "got true (a boolean)"),                     # a Literal[0..3] took true as 1
    ("training", "micro_batch", 2.5, "valid integer, got 2.5"),
])
def test_no_coercion_in_files(tmp_path: Path, section: str, key: str, value: object, needle: str) -> None:
    data = copy.deepcopy(SCENARIO)
    data.setdefault(section, {})[key] = value
    p = write_scenario(tmp_path / "s.yaml", data)
    cli("validate", str(p)).refused(str(p), f"{section}.{key}", needle)


@pytest.mark.parametrize("override,needle", [
    ("parallelism.dp=true", "valid integer, got true"),                        # ran as dp=1
    ("cluster.p2p=yes", "valid boolean, got 'yes'"),                           # YAML 1.1 read yes as true
    ("cluster.gpus=0x10", "0x10 on line 1 is a hexadecimal integer"),          # YAML 1.2 hex: refused (issue 37)
    ("training.global_batch=1:30", "valid integer, got '1:30'"),               # YAML 1.1 read 1:30 as 90
])
def test_no_coercion_through_set(scenario_file: Path, override: str, needle: str) -> None:
    cli("validate", str(scenario_file), "--set", override).refused(needle)


def test_unquoted_dates_stay_text(tmp_path: Path) -> None:
    # YAML 1.1 read 2026-11-25 as a date object; a str field then failed or held a non-string
    prof = tmp_path / "p.yaml"
    prof.write_text("name: p\nsource: {date: 2026-11-25}\n")
    data = copy.deepcopy(SCENARIO)
    data["cluster"]["profile"] = str(prof)
    r = cli("validate", str(write_scenario(tmp_path / "s.yaml", data)), "--json")
    assert r.code == 0, r.err


@pytest.mark.parametrize("size,needle", [
    ("1.5B", "is 1.5 bytes, not a whole number of bytes"),                    # was rounded to 2 B
    ("0.3KiB", "307.2 bytes"),
    ("2EiB", "unknown size unit"),
    ("1e20", "exceeds the bound of 1 PiB"),
])
def test_sizes_are_whole_bytes(size: str, needle: str) -> None:
    cli("collective", "all_reduce", "-t", "hgx-h200", "--gpus", "2", "--size", size).refused(needle)


def test_barrier_with_a_size_is_refused() -> None:
    # was: the size was dropped silently
    cli("collective", "barrier", "-t", "hgx-h200", "--size", "1GiB").refused("a barrier moves no data")
    assert cli("collective", "barrier", "-t", "hgx-h200", "--json").code == 0


def test_fit_that_rejects_every_row_exits_2(tmp_path: Path) -> None:
    # was: exit 0 and a profile with collectives: [] and measured: true (report exits 2 on the same file)
    m = tmp_path / "m.jsonl"
    m.write_text('{"kind": "meta", "gpu": "NVIDIA H200", "world_size": 2}\n'
                 '{"kind": "collective", "op": "all_reduce", "ranks": 2, "size_bytes": "x", "time_us": 5}\n'
                 '{"kind": "collective", "op": "all_reduce", "ranks": 2, "size_bytes": 1024, "time_us": 5}\n')
    out = tmp_path / "p.yaml"
    cli("calibrate", "fit", str(m), "-o", str(out)).refused("nothing could be fitted", "no profile written")
    assert not out.exists()
    assert cli("calibrate", "report", str(m), "-p", "hgx-h200").code in (0, 2)


def test_nccl_tests_rows_with_wrong_results_are_refused(tmp_path: Path) -> None:
    # was: imported and fitted without a word; then skipped with a warning; now (issue 37) the log is refused
    # unless --allow-wrong, which keeps the row with its count
    lines = NT_LOG.read_text().splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("1048576 "))
    toks = lines[i].split()
    toks[8] = "3"  # out-of-place #wrong
    lines[i] = "   ".join(toks)
    log = tmp_path / "all_reduce.log"
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "nt.jsonl"
    cli("calibrate", "import-nccl-tests", str(log), "-o", str(out)).refused(
        str(log), f"line {i + 1}: the out-of-place result of 1048576 bytes (#wrong = 3", "--allow-wrong")
    assert not out.exists()
    r = cli("calibrate", "import-nccl-tests", str(log), "-o", str(out), "--allow-wrong")
    assert r.code == 0, r.err
    assert f"{log}:{i + 1}: kept the out-of-place result of 1048576 bytes (#wrong = 3" in r.err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    kept = [x for x in rows if x["kind"] == "collective" and x["size_bytes"] == 1048576 and not x["inplace"]]
    assert [x["wrong"] for x in kept] == [3]


@pytest.mark.parametrize("content", [
    "",                                                                                     # empty
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n#\n#       size         count      type   redop    root     time   algbw   busbw "
    "#wrong     time   algbw   busbw #wrong\n",                                              # header only
    (REPO / "scenarios" / "gpt-1b-ddp.yaml").read_text(),                                   # not a log
], ids=["empty", "header-only", "scenario-yaml"])
def test_import_without_results_exits_2(tmp_path: Path, content: str) -> None:
    # was: exit 0
    log = tmp_path / "all_reduce.log"
    log.write_text(content)
    out = tmp_path / "nt.jsonl"
    cli("calibrate", "import-nccl-tests", str(log), "-o", str(out)).refused(str(log), "no nccl-tests result rows")
    assert not out.exists()
