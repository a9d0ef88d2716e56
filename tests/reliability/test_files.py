"""Issue 37 (a, b): one input reader and one output writer for every command.

Inputs that are not regular files (a FIFO with no writer, /dev/zero, /dev/urandom, a folder) are
refused by ``stat`` before anything opens them; JSON is depth- and digit-bounded before parsing.
Every output goes through a temporary file beside the target and a rename, and any OS error is one
``error: <path>: cannot write...: <reason>`` line. Each case runs in-process under 60 s and 2 GiB
(:func:`conftest.cli_guarded`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import REPO, cli, cli_guarded

NT_LOG = REPO / "tests" / "data" / "h200x2" / "nt_all_reduce.txt"
GOODPUT = ("goodput", "scenarios/gpt-1b-ddp.yaml", "--mtbf-gpu-hours", "1000", "--ckpt-write-GBps", "10",
           "--restart-min", "10", "--run-days", "1")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    p = tmp_path / "pipe.yaml"
    os.mkfifo(p)
    return p


# which argument of which command gets the special file; {} is the file
READERS = {
    "run": ("run", "{}", "--json"),
    "validate": ("validate", "{}"),
    "plan": ("plan", "{}"),
    "sweep": ("sweep", "{}", "-o", "OUT"),
    "goodput": ("goodput", "{}", "--mtbf-gpu-hours", "1000", "--ckpt-write-GBps", "10", "--restart-min", "10",
                "--run-days", "1"),
    "report": ("report", "{}"),
    "collective --profile": ("collective", "all_reduce", "-t", "hgx-h200", "--gpus", "2", "--size", "1MiB",
                             "--profile", "{}"),
    "collective -t": ("collective", "all_reduce", "-t", "{}", "--gpus", "2", "--size", "1MiB"),
    "topo show": ("topo", "show", "{}"),
    "topo import": ("topo", "import", "{}"),
    "calibrate fit": ("calibrate", "fit", "{}", "-o", "OUT/p.yaml"),
    "calibrate report": ("calibrate", "report", "{}", "-p", "hgx-h200"),
    "calibrate import-nccl-tests": ("calibrate", "import-nccl-tests", "{}", "-o", "OUT/nt.jsonl"),
}


def _args(template: tuple[str, ...], path: Path, out: Path) -> list[str]:
    return [str(path) if a == "{}" else a.replace("OUT", str(out)) for a in template]


@pytest.mark.parametrize("command", sorted(READERS))
def test_a_fifo_is_refused_before_it_is_opened(command: str, fifo: Path, tmp_path: Path) -> None:
    # was: run, import-nccl-tests and fit blocked forever in open() (a named pipe with no writer)
    cli_guarded(*_args(READERS[command], fifo, tmp_path), seconds=30).refused(
        str(fifo), "a named pipe (FIFO), not a regular file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("command", ["run", "calibrate fit", "report", "calibrate import-nccl-tests", "topo import"])
def test_a_device_is_refused_before_it_is_read(command: str, device: str, tmp_path: Path) -> None:
    # was: MemoryError (run /dev/zero) or reading without end (/dev/urandom)
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    cli_guarded(*_args(READERS[command], Path(device), tmp_path), seconds=30).refused(
        device, "a character device, not a regular file")


@pytest.mark.parametrize("command", ["run", "report", "calibrate fit", "calibrate import-nccl-tests"])
def test_a_folder_is_refused(command: str, tmp_path: Path) -> None:
    folder = tmp_path / "d.yaml"
    folder.mkdir()
    if command == "report":  # a folder is a sweep's output to report: refused for lacking its table
        cli(*_args(READERS[command], folder, tmp_path)).refused(str(folder), "a folder without results.csv")
    else:
        cli(*_args(READERS[command], folder, tmp_path)).refused(str(folder), "is a folder, not a file")


def test_a_50_mb_log_is_refused_from_its_size(tmp_path: Path) -> None:
    # was: minutes; the size comes from stat, so a sparse 50 MB file costs nothing to make or refuse
    log = tmp_path / "big.log"
    with open(log, "wb") as fh:
        fh.truncate(50_000_000)
    cli_guarded("calibrate", "import-nccl-tests", str(log), "-o", str(tmp_path / "nt.jsonl"), seconds=20).refused(
        str(log), "file of 50,000,000 bytes exceeds the 4,194,304-byte limit of nccl-tests logs")


@pytest.mark.parametrize("text,needle", [
    ('{"scenario": ' + "9" * 5000 + "}", "integer of 5000 digits"),              # was: AttributeError ... 'msg'
    ("[" * 100_000 + "]" * 100_000, "JSON nested 100000 deep (more than 100"),   # was: RecursionError
    ("[" * 5000 + "]", "JSON nested 5000 deep"),
    ('{"a": 1', "not JSON (Expecting"),
])
def test_report_of_hostile_json(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "r.json"
    p.write_text(text)
    cli("report", str(p), "-o", str(tmp_path / "r.html")).refused(str(p), needle)
    assert not (tmp_path / "r.html").exists()


# ----------------------------------------------------------------------------------- outputs
def _read_only_place(tmp_path: Path, name: str) -> Path:
    """A target whose folder cannot be written: a chmod 555 folder for a normal user; for root
    (who ignores permission bits) sysfs, which refuses new files to everyone."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro / name
    if not Path("/sys").is_dir():
        pytest.skip("no read-only place for root")
    return Path("/sys") / f"clustersim-test-{name}"


def _targets(tmp_path: Path, name: str) -> dict[str, Path]:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "afolder").mkdir()
    return {"folder": tmp_path / "afolder", "under-a-file": tmp_path / "afile" / name,
            "/dev/full": Path("/dev/full"), "read-only": _read_only_place(tmp_path, name)}


REASONS = {"folder": "is a folder", "under-a-file": "Not a directory", "/dev/full": "No space left on device",
           "read-only": ""}  # Permission denied, or EACCES/EROFS of sysfs; the message gives the OS's words


WRITERS = {
    "plan --write-best": ("plan", "scenarios/ref-tp2.yaml", "--workers", "1", "--flow-top", "0", "--top", "1",
                          "--write-best", "{}"),
    "run --html": ("run", "scenarios/ref-single.yaml", "--fidelity", "analytical", "--html", "{}"),
    "report -o": ("report", "RUNJSON", "-o", "{}"),
    "run --trace": ("run", "scenarios/ref-single.yaml", "--fidelity", "analytical", "--trace", "{}"),
    "collective --plot": ("collective", "all_reduce", "-t", "hgx-h200", "--gpus", "2", "--sizes", "1KiB:4KiB",
                          "--plot", "{}"),
    "topo import -o": ("topo", "import", str(REPO / "tests/data/h200x2/nvidia-smi-topo-m.txt"), "-o", "{}"),
    "calibrate fit -o": ("calibrate", "fit", str(NT_LOG), "--topology", "hgx-h200", "-o", "{}"),
    "import-nccl-tests -o": ("calibrate", "import-nccl-tests", str(NT_LOG), "-o", "{}"),
}
# plan (2.5 s a run) only where it counts: its folder and read-only targets are refused before planning
CASES = [(w, t) for w in sorted(WRITERS) for t in REASONS
         if not (w == "plan --write-best" and t == "under-a-file")
         and not (w in ("run --html", "report -o") and t in ("under-a-file", "read-only"))]


@pytest.mark.parametrize("writer,target", CASES)
def test_every_output_error_is_one_line_naming_the_path(writer: str, target: str, tmp_path: Path) -> None:
    # was: IsADirectoryError / OSError (plan --write-best), MemoryError (import-nccl-tests -o /dev/full),
    # silence (--plot /dev/full)
    if target == "/dev/full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    needle = REASONS[target]
    path = _targets(tmp_path, "out.png" if "plot" in writer else "out.json")[target]
    run_json = tmp_path / "run.json"
    run_json.write_text(json.dumps({"scenario": "s", "fidelity": "analytical", "n_gpus": 1, "step_time_s": 0.1,
                                    "breakdown": {"compute": 0.1}}))
    args = [str(path) if a == "{}" else str(run_json) if a == "RUNJSON" else a for a in WRITERS[writer]]
    r = cli_guarded(*args, seconds=60)
    r.refused(str(path), "cannot write", needle)
    assert not list(path.parent.glob(f".{path.name}.tmp-*")) if path.parent.is_dir() and target != "read-only" else True


@pytest.mark.parametrize("where", ["under-a-file", "read-only"])
def test_sweep_into_an_unwritable_folder(tmp_path: Path, where: str) -> None:
    # was: NotADirectoryError / PermissionError
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "out" if where == "under-a-file" else _read_only_place(tmp_path, "sweep-out")
    cli("sweep", "scenarios/study-pi-scaling.yaml", "-o", str(out)).refused(
        str(out), "cannot write", "Not a directory" if where == "under-a-file" else "")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch) -> None:
    from clustersim import files

    target = tmp_path / "p.yaml"
    target.write_text("old\n")

    def deny(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(files.os, "replace", deny)
    cli("calibrate", "fit", str(NT_LOG), "--topology", "hgx-h200", "-o", str(target)).refused(
        str(target), "cannot write: Permission denied")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["p.yaml"]


def test_outputs_to_a_device_are_written_in_place(tmp_path: Path) -> None:
    # /dev/null (the determinism test's target) stays a device: written, not replaced by a rename
    r = cli("calibrate", "fit", str(NT_LOG), "--topology", "hgx-h200", "-o", "/dev/null")
    assert r.code == 0, r.err
    assert Path("/dev/null").is_char_device()
    r = cli("calibrate", "import-nccl-tests", str(NT_LOG), "-o", str(tmp_path / "nt.jsonl"))
    assert r.code == 0 and json.loads((tmp_path / "nt.jsonl").read_text().splitlines()[0])["kind"] == "meta"


@pytest.mark.parametrize("depth,needle", [(70, "nested more than 64 deep on line 1"),
                                          (100_000, "exceeded maximum nesting depth")])
def test_deep_yaml_is_refused(tmp_path: Path, depth: int, needle: str) -> None:
    # the depth limit of the YAML reader (libyaml's own stops at 1,000 levels, before any Python recursion)
    p = tmp_path / "s.yaml"
    p.write_text("name: " + "[" * depth + "]" * depth + "\n")
    cli("validate", str(p)).refused(str(p), needle)
