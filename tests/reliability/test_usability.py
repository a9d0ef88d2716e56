"""Issue 17, "Small things a new user hit"."""

from __future__ import annotations

import copy
import io
import re
import time
from pathlib import Path

import yaml
from rich.console import Console

from conftest import REPO, SCENARIO, cli, write_scenario

NT_LOG = REPO / "tests" / "data" / "h200x2" / "nt_all_reduce.txt"
BENCH = REPO / "profiles" / "measurements" / "h200x2" / "bench-graph.jsonl"


def test_validate_prints_valid_yaml_with_long_lines(tmp_path: Path) -> None:
    # was: rich wrapped long lines at 80 columns, which broke the YAML when piped
    data = copy.deepcopy(SCENARIO)
    data["description"] = "a description far longer than eighty columns, " * 4
    r = cli("validate", str(write_scenario(tmp_path / "s.yaml", data)))
    assert r.code == 0, r.err
    doc = yaml.safe_load(r.out)
    assert doc["description"] == data["description"]
    assert doc["_resolved"]["gpus"] == 2


def test_readme_fit_then_report_agree_on_the_holdout(tmp_path: Path) -> None:
    # was: fit defaulted to --holdout none, report to odd: a warning, and fitted points plotted as held out
    prof = tmp_path / "p.yaml"
    assert cli("calibrate", "fit", str(NT_LOG), "-o", str(prof), "--topology", "hgx-h200").code == 0
    r = cli("calibrate", "report", str(NT_LOG), "--profile", str(prof))
    assert r.code == 0, r.err
    assert "warning" not in r.err and "in-sample" in r.out
    # a profile fitted with a hold-out is reported on that hold-out by default
    assert cli("calibrate", "fit", str(NT_LOG), "-o", str(prof), "--holdout", "odd", "--topology", "hgx-h200").code == 0
    r = cli("calibrate", "report", str(NT_LOG), "--profile", str(prof))
    assert r.code == 0 and "held-out odd" in r.out and "warning" not in r.err


def test_fit_table_is_readable_at_80_columns(tmp_path: Path) -> None:
    # was: cut cells (…) and 1e+06 caps
    r = cli("calibrate", "fit", str(BENCH), "-o", str(tmp_path / "p.yaml"), "--topology", "hgx-h200")
    assert r.code == 0, r.err
    table = r.out.split("links:")[0]
    assert "…" not in table and not re.search(r"\de[+-]\d", table)
    assert max(len(ln) for ln in table.splitlines()) <= 80
    assert "flat" in table  # the algbw cap, said in words


def test_progress_shows_on_a_terminal_only() -> None:
    from clustersim.cli.common import progress

    tty = Console(file=io.StringIO(), force_terminal=True, width=80)
    with progress("simulating x", console=tty) as update:
        update("writing")
        time.sleep(0.2)
    assert "writing" in tty.file.getvalue() or "simulating" in tty.file.getvalue()
    piped = Console(file=io.StringIO(), force_terminal=False)
    with progress("simulating x", console=piped) as update:
        update("writing")
    assert piped.file.getvalue() == ""


def test_long_commands_print_nothing_extra_when_piped(scenario_file: Path) -> None:
    r = cli("run", str(scenario_file), "--json", "--fidelity", "analytical")
    assert r.code == 0 and r.err == ""


def test_calibrate_help_has_examples() -> None:
    r = cli("calibrate", "--help")
    assert r.code == 0 and "Examples:" in r.out
    assert "calibrate fit" in r.out and "calibrate report" in r.out and "import-nccl-tests" in r.out


def test_topo_import_of_an_h200_dump_says_the_gpu_was_assumed(tmp_path: Path) -> None:
    # was: an H200 `nvidia-smi topo -m` dump was imported as H100 without more than a quiet note
    dump = REPO / "tests" / "data" / "h200x2" / "nvidia-smi-topo-m.txt"
    r = cli("topo", "import", str(dump))
    assert r.code == 0
    assert "ASSUMED H100-SXM" in r.err and "H200-SXM" in r.err and "--gpu" in r.err
    assert any("ASSUMED" in x for x in yaml.safe_load(r.out)["inferred"])
    # with the `nvidia-smi` table appended (it has the names), the model is read from the dump
    both = tmp_path / "topo.txt"
    both.write_text(dump.read_text() + (REPO / "tests" / "data" / "h200x2" / "nvidia-smi.txt").read_text())
    r = cli("topo", "import", str(both))
    assert r.code == 0 and yaml.safe_load(r.out)["gpu"] == "H200-SXM" and "ASSUMED" not in r.err
    r = cli("topo", "import", str(dump), "--gpu", "H200-SXM")
    assert r.code == 0 and yaml.safe_load(r.out)["gpu"] == "H200-SXM" and "ASSUMED" not in r.err
