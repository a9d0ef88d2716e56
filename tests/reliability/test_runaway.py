"""Issue 17, "Hangs and runaway memory": refused up front, in a subprocess under a 2 GiB address-space
limit and a 60 s time limit (each used to run for minutes or take several GB)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from conftest import SCENARIO, cli_limited, write_scenario


@pytest.mark.parametrize("field,value,needle", [
    ("global_batch", "1e30", "valid integer, got 1e+30"),              # was: 5.9 GB after 20 s and growing
    ("global_batch", "8000000", "simulated events"),                   # was: 30 s and 2.2 GB
    ("global_batch", str(10**30), "integer of 31 digits"),
    ("global_batch", str(10**20), "exceed the bound of 16,777,216"),
])
def test_huge_global_batch(tmp_path: Path, field: str, value: str, needle: str) -> None:
    text = (f"name: x\ncluster: {{topology: hgx-h200, gpus: 2}}\nmodel: {{preset: gpt-1b}}\n"
            f"training: {{global_batch: {value}, micro_batch: 4}}\nparallelism: {{dp: 2}}\n")
    p = write_scenario(tmp_path / "s.yaml", text=text)
    cli_limited("run", str(p), "--json").refused(str(p), f"training.{field}", needle)


def test_ten_million_layers(tmp_path: Path) -> None:
    # was: still running at 60 s, 2 GB
    data = copy.deepcopy(SCENARIO)
    data["model"]["layers"] = 10_000_000
    p = write_scenario(tmp_path / "s.yaml", data)
    cli_limited("run", str(p), "--json").refused("model.layers", "exceed the bound")


def test_collective_ten_million_nodes() -> None:
    # was: built the whole cluster before checking the fabric (9 GB, then MemoryError)
    cli_limited("collective", "all_reduce", "-t", "dgx-h100-superpod", "--nodes", "10000000", "--size", "1GiB").refused(
        "nodes", "10,000,000 nodes exceed the bound of 1,048,576")


def test_collective_ten_million_gpus() -> None:
    # was: clean, but 23 s and 7.8 GB
    cli_limited("collective", "all_reduce", "-t", "hgx-h200", "--gpus", "10000000", "--size", "1GiB").refused(
        "gpus", "exceed the bound")


def test_fabric_that_cannot_hold_the_nodes_is_refused_before_building() -> None:
    cli_limited("collective", "all_reduce", "-t", "dgx-h100-superpod", "--nodes", "100000", "--size", "1GiB").refused(
        "cluster.fabric.tiers", "holds at most")


def test_50_mb_scenario(tmp_path: Path) -> None:
    # was: 79 s and 2.7 GB before its clean error; now refused from the file size alone
    p = tmp_path / "big.yaml"
    with open(p, "w") as fh:
        fh.write("name: x\ndescription: |\n")
        line = "  " + "x" * 98 + "\n"
        for _ in range(500_000):
            fh.write(line)
    cli_limited("validate", str(p), seconds=20).refused(str(p), "exceeds the 4,194,304-byte limit")


def test_alias_bomb(tmp_path: Path) -> None:
    # a few hundred bytes that stand for 10^9 values
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    p = write_scenario(tmp_path / "bomb.yaml", text="\n".join(lines) + "\nname: x\n")
    cli_limited("validate", str(p), seconds=20).refused(str(p), "aliases are expanded")


def test_max_memory_refuses_with_an_estimate_and_raises_the_limit() -> None:
    r = cli_limited("topo", "show", "dgx-h100-superpod", "--nodes", "64", "--json", "--max-memory", "1MiB")
    r.refused("need about", "of memory; the limit is 1 MiB (raise it with --max-memory)")
    ok = cli_limited("topo", "show", "dgx-h100-superpod", "--nodes", "64", "--json", "--max-memory", "8GiB")
    assert ok.code == 0, ok.err


def test_max_events_refuses_and_raises_the_limit(tmp_path: Path) -> None:
    p = write_scenario(tmp_path / "s.yaml")
    r = cli_limited("run", str(p), "--json", "--fidelity", "analytical", "--max-events", "10")
    r.refused("simulated events", "the limit is 10 (raise it with --max-events)")
    assert cli_limited("run", str(p), "--json", "--fidelity", "analytical").code == 0


def test_size_range_of_a_trillion_sizes_is_refused_before_listing_them() -> None:
    cli_limited("collective", "all_reduce", "-t", "hgx-h200", "--sizes", "1:1TB:+1", seconds=20).refused(
        "has 1,000,000,000,000 sizes (at most 10,000)")


def test_flow_sweep_on_65536_gpus_is_refused_up_front() -> None:
    # 30 sizes x ~8 s each at flow fidelity: refused with the estimate instead of running for minutes
    cli_limited("collective", "all_reduce", "-t", "dgx-h100-superpod", "--nodes", "8192", "--sizes", "8:4GiB",
                "--fidelity", "flow").refused("size(s) at flow fidelity on 65,536 GPUs", "--max-events")


def test_study_of_ten_billion_points_is_refused_before_listing_them(tmp_path: Path) -> None:
    axes = "\n".join(f"  - grid: {{simulation.seed{i}: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}" for i in range(10))
    p = tmp_path / "study.yaml"
    p.write_text(f"name: huge\nscenario: gpt-1b-ddp\naxes:\n{axes}\n")
    cli_limited("sweep", str(p), "-o", str(tmp_path / "out"), "--executor", "serial", "--no-progress",
                seconds=30).refused("axes", "10,000,000,000 study points exceed the bound of 100,000")
