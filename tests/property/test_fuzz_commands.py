"""Fuzzing every command and every option (issue 37): argument lists generated from the typer signatures.

The command tree is read from the app itself (``typer.main.get_command``), so a command or an option
added later is fuzzed without a change here (:func:`test_every_command_has_a_baseline` fails until
the new command has a valid baseline). Each case starts from that valid baseline and sets 1-3 of
the command's options (or replaces a file argument) with a value of the option's annotated type
drawn from boundary and hostile pools: 0, -1, 2^20 + 1, 2^53 + 1, 31-digit integers, NaN and
infinities, 1e-300 and 1e300, odd strings (``1:30``, ``gpu[0-99999999]``, an ANSI escape, 300
characters), and for file arguments a FIFO with no writer, ``/dev/zero``, a folder, a missing file,
a binary one. Outputs go to a temporary folder, a folder, ``/dev/full`` or under a file.

Every case must be a result (exit 0) or one refusal line (exit 2), never a traceback, in this
process under 60 s and 2 GiB more address space (:func:`cli_inprocess.limited`). ``calibrate
bench`` has its measuring loop replaced by a no-op (no torch job is started; torch itself is not
imported) and Slurm's tools are absent, so nothing leaves the machine. CI runs 2 derandomised examples per command (~17 x 2
cases, a few seconds); ``CLUSTERSIM_FUZZ_EXAMPLES=50 CLUSTERSIM_FUZZ_RANDOM=1`` explores further.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest
import typer.main
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_inprocess import limited, run_cli

REPO = Path(__file__).resolve().parents[2]
NT_LOG = REPO / "tests" / "data" / "h200x2" / "nt_all_reduce.txt"
SMI = REPO / "tests" / "data" / "h200x2" / "nvidia-smi-topo-m.txt"
DATA = REPO / "tests" / "data"
SETTINGS = settings(max_examples=int(os.environ.get("CLUSTERSIM_FUZZ_EXAMPLES", "2")), deadline=None,
                    derandomize=os.environ.get("CLUSTERSIM_FUZZ_RANDOM") != "1", database=None,
                    suppress_health_check=list(HealthCheck))
SMALL = {"name": "fz", "cluster": {"topology": "hgx-h200", "gpus": 2},
         "model": {"layers": 2, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
         "training": {"global_batch": 4, "micro_batch": 2}, "parallelism": {"dp": 2},
         "simulation": {"fidelity": "analytical"}}

INTS = ["0", "-1", "1", "2", "3", "8", str(2**20 + 1), str(2**53 + 1), "1" + "0" * 30, "x", "1e3"]
FLOATS = ["0", "-1", "1", "2.5", "1e-300", "1e300", "nan", "inf", "-inf", "x"]
STRS = ["", "1MiB", "1KiB:1MiB", "all_reduce", "hgx-h200", "auto", "none", "ring", "1:30", "gpu[0-99999999]",
        "\x1b[31m", "x" * 300, "parallelism.dp=3", "a=b", "9" * 50, "1,2,4", "odd"]
OUTPUT_NAMES = ("output", "write_best", "plot", "trace", "html", "output_dir", "out")


def _commands() -> dict[str, object]:
    from clustersim.cli import app

    out: dict[str, object] = {}

    def walk(cmd, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, path + (name,))
        else:
            out[" ".join(path)] = cmd

    walk(typer.main.get_command(app), ())
    return out


COMMANDS = _commands()


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> dict[str, str]:
    """The files the cases use, made once: valid inputs, hostile inputs, output targets."""
    d = tmp_path_factory.mktemp("fuzz")
    (d / "s.yaml").write_text(yaml.safe_dump(SMALL))
    (d / "study.yaml").write_text(yaml.safe_dump({"name": "st", "scenario": str(d / "s.yaml"),
                                                  "axes": [{"grid": {"training.micro_batch": [1, 2]}}]}))
    (d / "run.json").write_text(json.dumps({"scenario": "fz", "fidelity": "analytical", "n_gpus": 2,
                                            "step_time_s": 0.1, "breakdown": {"compute": 0.1}}))
    (d / "binary.bin").write_bytes(b"\x00\xff" * 64)
    (d / "empty.yaml").write_text("")
    (d / "afile").write_text("x")
    (d / "folder").mkdir()
    os.mkfifo(d / "fifo")
    return {"dir": str(d), "scenario": str(d / "s.yaml"), "study": str(d / "study.yaml"), "run": str(d / "run.json")}


def baselines(p: dict[str, str]) -> dict[str, list[str]]:
    """One valid argument list per command ({out} is a fresh output path)."""
    s = p["scenario"]
    return {
        "validate": [s], "schema": ["scenario"],
        "collective": ["all_reduce", "-t", "hgx-h200", "--gpus", "2", "--size", "1MiB"],
        "run": [s], "sweep": [p["study"], "-o", "{out}"],
        "goodput": [s, "--mtbf-gpu-hours", "50000", "--ckpt-write-GBps", "10", "--restart-min", "10", "--run-days", "1"],
        "plan": [s, "--workers", "1", "--flow-top", "0", "--top", "2"], "report": [p["run"], "-o", "{out}.html"],
        "topo list": [], "topo show": ["hgx-h200"], "topo draw": ["hgx-h200", "-o", "{out}.png"],
        "topo import": [str(SMI)], "calibrate bench": ["-o", "{out}.jsonl", "--device", "cpu", "--quick"],
        "calibrate import-nccl-tests": [str(NT_LOG), "-o", "{out}.jsonl"], "calibrate slurm": ["--device", "cpu"],
        "calibrate fit": [str(NT_LOG), "-o", "{out}.yaml", "--topology", "hgx-h200"],
        "calibrate report": [str(NT_LOG), "-p", "hgx-h200"],
        "compare": [s, str(DATA / "logs" / "steps.jsonl")],
        "scenario from-hf": [str(DATA / "importers" / "hf" / "Meta-Llama-3-8B.json"), "-o", "{out}.yaml"],
        "scenario from-megatron": ["--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                                   "--micro-batch-size 1 --global-batch-size 2", "-o", "{out}.yaml"],
        "scenario from-torchtitan": [str(DATA / "importers" / "torchtitan" / "llama3_8b.toml"), "-o", "{out}.yaml"],
        "scenario from-torch": [f"{DATA / 'torch_models.py'}:mlp", "--input-shape", "8x784", "-o", "{out}.yaml"],
    }


def _pool(param, p: dict[str, str]) -> list[str]:
    ann = getattr(param.type_descriptor, "annotation", str)
    d = p["dir"]
    hostile = [f"{d}/fifo", "/dev/zero", f"{d}/folder", f"{d}/missing.yaml", f"{d}/binary.bin", f"{d}/empty.yaml"]
    if param.name in OUTPUT_NAMES:
        return [f"{d}/o.out", "/dev/full", f"{d}/folder", f"{d}/afile/x.out", f"{d}/new/sub/x.out"]
    if ann is bool:
        return []
    if ann is int:
        return INTS
    if ann is float:
        return FLOATS
    if ann is Path or "Path" in str(ann):
        return hostile + [p["scenario"], str(NT_LOG), str(SMI)]
    return STRS


@st.composite
def cases(draw, name: str, p: dict[str, str]) -> list[str]:
    cmd = COMMANDS[name]
    args = [a.replace("{out}", f"{p['dir']}/out-{draw(st.integers(0, 9))}") for a in baselines(p)[name]]
    opts = [q for q in cmd.params if q.opts and q.opts[0].startswith("-") and q.name != "help"]
    file_args = [i for i, a in enumerate(args) if a.startswith((p["dir"], str(REPO)))
                 and (i == 0 or not args[i - 1].startswith("-"))]
    if file_args and draw(st.booleans()):  # replace a file argument with a hostile one
        args[draw(st.sampled_from(file_args))] = draw(st.sampled_from(
            [f"{p['dir']}/fifo", "/dev/zero", f"{p['dir']}/folder", f"{p['dir']}/missing", f"{p['dir']}/binary.bin"]))
    for q in draw(st.lists(st.sampled_from(opts), min_size=1, max_size=3, unique_by=lambda q: q.name)) if opts else []:
        pool = _pool(q, p)
        flag = draw(st.sampled_from(list(q.opts) + list(getattr(q, "secondary_opts", []) or [])))
        args += [flag] if not pool or getattr(q, "is_flag", False) else [flag, draw(st.sampled_from(pool))]
    return args


@pytest.fixture(autouse=True)
def _no_jobs(monkeypatch, place) -> None:
    """Nothing leaves the machine: the bench's measuring loop records its config, Slurm is absent."""
    from clustersim.calibration import bench, slurm
    from clustersim.errors import ClusterSimError

    monkeypatch.setattr(bench, "run_bench", lambda cfg: None)

    def no_tool(name: str) -> str:
        raise ClusterSimError(f"{name} not found: run this on a Slurm login node (or print the script and copy it)")

    monkeypatch.setattr(slurm, "_tool", no_tool)
    monkeypatch.chdir(place["dir"])  # `calibrate slurm` writes under the cwd


def check(name: str, args: list[str]) -> None:
    with limited(seconds=60, memory_bytes=2 * 2**30):  # the limits (valid `report --transfer`: 6 s of CPU)
        code, out, err = run_cli(*name.split(), *args)
    shown = f"clustersim {name} {' '.join(a[:60] for a in args)}"
    assert "Traceback" not in err and "Traceback" not in out, (shown, err[-3000:])
    assert code in (0, 2), (shown, code, err[-3000:])
    if code == 2:  # ours ("error: file: field: rule") or click's ("Error: Invalid value for ...")
        assert len([ln for ln in err.splitlines() if ln.startswith(("error:", "Error:"))]) == 1, (shown, err)


def test_every_command_has_a_baseline(place) -> None:
    assert sorted(baselines(place)) == sorted(COMMANDS), "a command without a fuzz baseline"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_fuzz_command(name: str, place, monkeypatch) -> None:
    if name == "calibrate bench" and "torch" not in sys.modules:
        # the bench only checks that torch imports before the (no-op) loop: spare the 8 s import
        monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))

    @SETTINGS
    @given(cases(name, place))
    def one(args: list[str]) -> None:
        check(name, args)

    one()
