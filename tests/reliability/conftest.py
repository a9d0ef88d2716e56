"""Helpers of the reliability suite: run the CLI in-process or in a limited subprocess.

Every case must end in a result (exit 0) or a clean refusal (exit 2 and one ``error:`` line
naming file, field and rule), never a traceback, within a time and memory limit.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_inprocess import limited, run_cli
import yaml

REPO = Path(__file__).resolve().parents[2]
SCENARIO = {
    "name": "rel", "cluster": {"topology": "hgx-h200", "gpus": 2},
    "model": {"layers": 4, "hidden": 1024, "heads": 8, "vocab": 32000, "seq_len": 1024},
    "training": {"global_batch": 8, "micro_batch": 2}, "parallelism": {"dp": 2},
}


@dataclass
class Result:
    """Exit code and the two streams of one command."""

    code: int
    out: str
    err: str

    def refused(self, *needles: str) -> None:
        """Assert a clean refusal: exit 2, one ``error:`` line, no traceback, each needle in it."""
        assert self.code == 2, (self.code, self.out[-2000:], self.err[-2000:])
        assert "Traceback" not in self.err and "Traceback" not in self.out
        lines = [ln for ln in self.err.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1, self.err
        for n in needles:
            assert n in self.err, (n, self.err)


def cli(*args: str) -> Result:
    """Run ``clustersim ARGS`` in this process (stdout and stderr captured); any exception other
    than the CLI's own exit is a failure of the test (a traceback a user would see)."""
    code, out, err = run_cli(*args)
    return Result(code, out, err)


def cli_limited(*args: str, seconds: float = 60, memory_bytes: int = 2 * 2**30) -> Result:
    """Run ``clustersim ARGS`` in a subprocess under an address-space limit and a time limit.

    A run away case (the hangs of issue 17) fails the test by timeout or MemoryError instead of
    taking the machine down.
    """

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-m", "clustersim", *args], capture_output=True, text=True,
                       timeout=seconds, preexec_fn=limit, env=env, cwd=REPO)
    return Result(p.returncode, p.stdout, p.stderr)


def write_scenario(path: Path, data: dict | None = None, text: str | None = None) -> Path:
    """A scenario file from a dict (default: a small 2-GPU GPT) or from raw YAML text."""
    path.write_text(text if text is not None else yaml.safe_dump(data or SCENARIO, sort_keys=False))
    return path


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    """The small valid scenario."""
    return write_scenario(tmp_path / "s.yaml")



def cli_guarded(*args: str, seconds: int = 60, memory_bytes: int = 2 * 2**30) -> Result:
    """:func:`cli` in this process under a time limit and 2 GiB more address space
    (:func:`cli_inprocess.limited`): for the cases that used to hang or run away."""
    with limited(seconds=seconds, memory_bytes=memory_bytes):
        return cli(*args)
