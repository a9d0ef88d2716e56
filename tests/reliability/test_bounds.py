"""Issue 37 (c): bounds with reasons on every option and field that scales work or time, checked
before any work; each case used to end in a traceback, a hang (> 60 s) or silence. In-process
under 60 s and 2 GiB (:func:`conftest.cli_guarded`)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from conftest import REPO, SCENARIO, cli, cli_guarded, write_scenario

GOODPUT = {"--mtbf-gpu-hours": "1000", "--ckpt-write-GBps": "10", "--restart-min": "10", "--run-days": "1"}


def _goodput() -> list[str]:
    return ["goodput", "scenarios/gpt-1b-ddp.yaml", *(x for kv in GOODPUT.items() for x in kv)]


@pytest.mark.parametrize("option,value,needle", [
    ("--run-days", "1e30", "1e+30 is outside 1e-06..3,650 (at most ten years"),     # was: ValueError (numpy)
    ("--trials", "1000000000", "1,000,000,000 is outside 2..100,000"),               # was: ArrayMemoryError 7.45 GiB
    ("--seed", "-1", "-1 is outside 0..4,294,967,295"),                              # was: ValueError
    ("--ckpt-write-GBps", "1e-300", "1e-300 is outside 0.001..1e+06"),               # was: min() of an empty sequence
    ("--gpus", "1000000000000", "exceed the bound of 1,048,576"),                    # was: > 60 s
    ("--mtbf-gpu-hours", "1e-9", "1e-09 is outside 1..1e+09"),                       # was: > 60 s (a failure per 3.6 us)
    ("--restart-min", "1e30", "1e+30 is outside 0..10,080"),                         # was: > 60 s
    ("--ckpt-GB", "nan", "must be a finite number, got nan"),
])
def test_goodput_options_are_bounded(option: str, value: str, needle: str) -> None:
    args = [*_goodput(), option, value]  # a repeated option: the last one counts
    cli_guarded(*args, seconds=30).refused(option, needle)


def test_goodput_with_both_mtbfs_tiny_is_refused(tmp_path: Path) -> None:
    # both MTBFs below the bound, then both at the bound on a million GPUs: the Monte-Carlo's work is refused
    args = _goodput()
    i = args.index("--mtbf-gpu-hours")
    args[i + 1] = "1e-9"
    cli_guarded(*args, "--mtbf-node-hours", "1e-9").refused("--mtbf-gpu-hours", "outside 1..1e+09")
    args[i + 1] = "1"
    cli_guarded(*args, "--mtbf-node-hours", "1", "--gpus", "1000000", seconds=30).refused(
        "MTBF", "the run practically never finishes", "Monte-Carlo attempts, more than the bound of 50,000,000")


@pytest.mark.parametrize("faults,needle", [
    ({"stragglers": [{"rank": 0, "slowdown": 1e9}]}, "faults.stragglers.0.slowdown: 1e+09 exceeds the bound of 1,000"),
    ({"stragglers": [{"rank": 0, "slowdown": 1e10}]}, "1e+10 exceeds the bound of 1,000 (a rank 1,000x slower"),
    ({"stragglers": [{"rank": 0, "host_slowdown": 1e9}]}, "host_slowdown: 1e+09 exceeds the bound of 1,000"),
    ({"stragglers": {"distribution": "lognormal", "sigma": 1000}}, "faults.stragglers.sigma: 1000 exceeds the bound of 1"),
], ids=["slowdown-1e9", "slowdown-1e10", "host-1e9", "sigma-1000"])
def test_stragglers_are_bounded(tmp_path: Path, faults: dict, needle: str) -> None:
    # was: > 60 s each (a step of 10^6-10^7 s at flow fidelity)
    p = write_scenario(tmp_path / "s.yaml", {**copy.deepcopy(SCENARIO), "faults": faults})
    cli_guarded("run", str(p), "--json", seconds=30).refused(str(p), needle)


JOB = {"name": "j", "cluster": {"topology": "hgx-h200", "gpus": 2}}


@pytest.mark.parametrize("job,needle", [
    # was: > 60 s (the clock at 10^12 s has a resolution of 1.2e-4 s: the all-reduce's events stopped advancing it)
    ({"phases": [{"name": "long", "host_seconds": 1e12}, {"name": "ar", "collective": {"op": "all_reduce", "size": "1GiB"}}]},
     "job.phases.0.host_seconds: 1e+12 exceeds the bound of 1e+06 (10^6 s, 11.6 days"),
    ({"phases": [{"name": "c", "compute": {"seconds": 1e7}}]}, "compute.seconds: 1e+07 exceeds the bound of 1e+06"),
    ({"phases": [{"name": "c", "compute": {"flops": 1e30}}]}, "compute.flops: 1e+30 exceeds the bound of 1e+24"),
    ({"iterations": 1000, "phases": [{"name": "h", "host_seconds": 600, "repeat": 10}]},
     "add up to 6e+06 s of simulated time (1,000 iteration(s) of 6e+03 s), more than the bound of 1e+06 s"),
], ids=["phase-1e12-then-all-reduce", "compute-seconds", "flops", "total-simulated-time"])
def test_simulated_time_is_bounded_up_front(tmp_path: Path, job: dict, needle: str) -> None:
    p = write_scenario(tmp_path / "j.yaml", {**JOB, "job": job, "simulation": {"fidelity": "flow"}})
    cli_guarded("run", str(p), "--json", seconds=30).refused(str(p), needle)


@pytest.mark.parametrize("args,needle", [
    (["--size", "9" * 5000], "size: size of 5,000 characters (at most 64"),            # was: ValueError (4300 digits)
    (["--sizes", "1:" + "9" * 5000], "sizes: size range of 5,002 characters"),
    (["--size", "1MiB", "--max-events", "1e30"], "Invalid value for '--max-events'"),   # click: not an integer
    (["--size", "1MiB", "--max-events", str(10**30)], "--max-events: 1,000,000,000,000,000,000,000,000,000,000 "
                                                      "exceeds the bound of 1,000,000,000"),
])
def test_collective_size_digits_and_max_events(args: list[str], needle: str) -> None:
    r = cli("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2", *args)
    if "Invalid value" in needle:  # click's own usage error: exit 2, one "Error:" line naming the option
        assert r.code == 2 and needle in r.err and "Traceback" not in r.err, r.err
    else:
        r.refused(needle)


@pytest.mark.parametrize("args,option", [
    (["topo", "import", str(REPO / "tests/data/h200x2/nvidia-smi-topo-m.txt"), "--nic-gbps", "nan"], "--nic-gbps"),
    (["calibrate", "report", str(REPO / "tests/data/h200x2/nt_all_reduce.txt"), "-p", "hgx-h200", "--transfer",
      "--line-GBps", "nan"], "--line-GBps"),                                            # was: ValueError
    (["goodput", "scenarios/gpt-1b-ddp.yaml", "--mtbf-gpu-hours", "inf", "--ckpt-write-GBps", "1",
      "--restart-min", "1", "--run-days", "1"], "--mtbf-gpu-hours"),
    (["calibrate", "fit", str(REPO / "tests/data/h200x2/nt_all_reduce.txt"), "-o", "/dev/null", "--peak-tflops",
      "-inf"], "--peak-tflops"),
])
def test_nan_and_infinite_options_are_refused(args: list[str], option: str) -> None:
    # was: accepted (NaN passes every `x > 0` check unseen)
    cli(*args).refused(option, "must be a finite number")


@pytest.mark.parametrize("text,needle", [
    ("seq_len: 0x800", "model.seq_len: 0x800 on line 1 is a hexadecimal integer"),   # was: read as 2048
    ("seq_len: 0o4000", "is a octal integer"),
])
def test_hex_and_octal_integers_are_refused(tmp_path: Path, text: str, needle: str) -> None:
    body = "\n".join(f"  {k}: {v}" for k, v in SCENARIO["model"].items() if k != "seq_len")
    p = write_scenario(tmp_path / "s.yaml", text=f"model:\n  {text}\n{body}\nname: x\n"
                       "cluster: {topology: hgx-h200, gpus: 2}\ntraining: {global_batch: 8, micro_batch: 2}\n"
                       "parallelism: {dp: 2}\n")
    cli("validate", str(p)).refused(str(p), needle.replace("line 1", "line 2"))


@pytest.mark.parametrize("name,code", [("a\\0b", "U+0000"), ("\\e[31mred\\e[0m", "U+001B"), ("x\\x9by", "U+009B")],
                         ids=["NUL", "ANSI", "C1"])
def test_control_characters_in_names_are_refused(tmp_path: Path, name: str, code: str) -> None:
    # was: accepted, and printed into tables and terminals as they are
    text = f'name: "{name}"\n' + "\n".join(f"{k}: {v}" for k, v in SCENARIO.items() if k != "name").replace("'", "")
    p = write_scenario(tmp_path / "s.yaml", text=text)
    cli("validate", str(p)).refused(str(p), f"name: control character {code} in text on line 1")
    cli("validate", str(tmp_path / "s.yaml"), "--set", "parallelism.dp=2").refused(code)


def test_topo_m_with_5000_gpus_and_unknown_cells(tmp_path: Path) -> None:
    # was: 5,000 GPUs parsed into a 25-million-cell matrix; unknown cells accepted without a word
    n = 5000
    big = tmp_path / "big.txt"
    big.write_text("\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\n"
                   + "GPU0\t" + "\t".join("X" if j == 0 else "NV18" for j in range(n)) + "\t0-1\n")
    cli("topo", "import", str(big)).refused(str(big), "5,000 node devices exceed the bound of 4,096")
    odd = tmp_path / "odd.txt"
    odd.write_text((REPO / "tests/data/h200x2/nvidia-smi-topo-m.txt").read_text().replace("NV18", "QQ9", 1))
    cli("topo", "import", str(odd)).refused(str(odd), "row GPU0, column GPU1: unknown relation 'QQ9'")


def test_nccl_xml_with_an_external_entity(tmp_path: Path) -> None:
    # was: refused by the parser but exit 0 downstream; topo import now exits 2 naming the entity
    xml = (REPO / "tests/data/h200x2/nccl_topo.xml").read_text()
    p = tmp_path / "xxe.xml"
    p.write_text('<?xml version="1.0"?>\n<!DOCTYPE system [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
                 + xml.replace("<system", '<system x="&xxe;"', 1))
    cli("topo", "import", str(p), "-o", str(tmp_path / "t.yaml")).refused(str(p), "external entity")
    assert not (tmp_path / "t.yaml").exists()


def test_gpus_beyond_one_node_say_how_many_nodes() -> None:
    # `--gpus 9` on the 8-GPU hgx-h200 is replicated into 2 nodes by design (tests/unit/test_topology_graph.py:
    # "replicate as needed"); not silent: the result names the nodes. A fixed cluster refuses more GPUs.
    r = cli("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "9", "--size", "1MiB")
    assert r.code == 0 and "9 GPUs (2 node(s)" in r.out, r.out
    cli("topo", "show", "dgx-h100", "--gpus", "9", "--nodes", "1").refused("asked for 9 GPUs but 1 node(s)")


def test_plan_of_the_cp_scenario_is_bounded(monkeypatch) -> None:
    # was: did not finish in 60 s (22,221 mixes to screen at 4-13 ms each); since the planner folds mixes that are
    # one run and screens memory-monotonically it finishes (35 s wall on 2 workers, dev VM 2026-12-02), so the bound
    # is checked here below that scenario's count: refused before any screening, with how to narrow the space
    from clustersim.plan import search

    monkeypatch.setattr(search, "MAX_SCREENED_MIXES", 1_000)
    cli_guarded("plan", "scenarios/llama2-7b-nemo-cp.yaml", "--flow-top", "0", "--top", "3", seconds=60).refused(
        "mixes pass the structural rules", "more than the bound of 1,000", "--tp")
