"""Issue 17, "Tracebacks": inputs that used to end in a Python traceback now exit 2 with one message."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from conftest import SCENARIO, cli, write_scenario


def test_trillion_layers_is_refused_with_the_bound(tmp_path: Path) -> None:
    # was: MemoryError in workload/transformer.py (chunk_units)
    data = copy.deepcopy(SCENARIO)
    data["model"]["layers"] = 1_000_000_000_000
    p = write_scenario(tmp_path / "s.yaml", data)
    cli("run", str(p), "--json").refused(str(p), "model.layers", "exceed the bound of 10,000")


def test_5000_digit_integer_in_a_scenario(tmp_path: Path) -> None:
    # was: ValueError: Exceeds the limit (4300 digits) for integer string conversion
    p = write_scenario(tmp_path / "s.yaml", text=f"name: x\ncluster: {{topology: hgx-h200, gpus: {'9' * 5000}}}\n")
    cli("validate", str(p)).refused(str(p), "integer of 5000 digits")


def test_5000_digit_integer_through_set(scenario_file: Path) -> None:
    cli("validate", str(scenario_file), "--set", f"parallelism.dp={'7' * 5000}").refused(
        "parallelism.dp", "integer of 5000 digits")


def test_5000_digit_integer_as_an_option() -> None:
    r = cli("collective", "all_reduce", "-t", "hgx-h200", "--gpus", "9" * 5000, "--size", "1MiB")
    assert r.code == 2 and "Traceback" not in r.err


@pytest.mark.parametrize("how", ["permission", "parent-is-a-file"])
def test_collective_plot_into_an_unwritable_place(tmp_path: Path, monkeypatch, how: str) -> None:
    # was: OSError from savefig. Root may write into a read-only folder, so the permission error is
    # raised by savefig itself; the second case is a real OSError (the parent is a file).
    if how == "permission":
        import matplotlib.figure

        def deny(self, fname, *a, **k):
            raise PermissionError(13, "Permission denied", str(fname))

        monkeypatch.setattr(matplotlib.figure.Figure, "savefig", deny)
        target = tmp_path / "bw.png"
    else:
        (tmp_path / "afile").write_text("x")
        target = tmp_path / "afile" / "bw.png"
    r = cli("collective", "all_reduce", "-t", "hgx-h200", "--gpus", "2", "--sizes", "1KiB:1MiB", "--plot", str(target))
    r.refused(str(target), "cannot write the plot")
