"""Deterministic: the same inputs and seed give byte-identical JSON (wall-time fields aside), also across
Python hash seeds (set and dict orders of strings)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

WALL = ("wall_s",)


def _run(args: list[str], hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    p = subprocess.run([sys.executable, "-m", "clustersim", *args], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    return "\n".join(ln for ln in p.stdout.splitlines() if not any(f'"{w}"' in ln for w in WALL))


@pytest.mark.parametrize("args", [
    ["run", "scenarios/hybrid-tp2-pp2-dp2.yaml", "--json"],
    ["run", "scenarios/montecarlo-pi.yaml", "--json", "--fidelity", "analytical"],
    ["collective", "all_reduce", "-t", "dgx-h100-superpod", "--nodes", "4", "--sizes", "1KiB:1GiB:x32",
     "--fidelity", "flow", "--json"],
    ["calibrate", "fit", "tests/data/h200x2/nt_all_reduce.txt", "-o", "/dev/null", "--name", "p", "--ci",
     "bootstrap", "--seed", "3", "--json", "--topology", "hgx-h200"],
], ids=["run-flow", "run-job", "collective-flow", "fit-bootstrap"])
def test_same_inputs_same_bytes(args: list[str]) -> None:
    assert _run(args, "1") == _run(args, "2")
