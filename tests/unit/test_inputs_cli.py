"""Every command of issue 35 has --help with examples, and bad input exits 2 with file/field/reason."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("command", [("scenario", "from-hf"), ("scenario", "from-megatron"),
                                     ("scenario", "from-torchtitan"), ("scenario", "from-torch"), ("compare",)])
def test_help_has_examples(cli, command):
    r = cli(*command, "--help")
    assert r.returncode == 0 and "Examples:" in r.stdout and "clustersim " + " ".join(command) in r.stdout


def test_from_torch_bad_factory_exits_2_before_importing_anything_heavy(cli):
    r = cli("scenario", "from-torch", "no_such_module_xyz:make", "--input-shape", "2x2")
    assert r.returncode == 2 and "factory: cannot import 'no_such_module_xyz'" in r.stderr
    r = cli("scenario", "from-torch", "m:f", "--input-shape", "2xq")
    assert r.returncode == 2 and "--input-shape: '2xq': expected sizes" in r.stderr


def test_missing_files_name_the_file(cli, tmp_path):
    for cmd in (("scenario", "from-hf"), ("scenario", "from-torchtitan")):
        r = cli(*cmd, str(tmp_path / "absent.file"))
        assert r.returncode == 2 and "absent.file: file not found" in r.stderr, r.stderr
    r = cli("compare", "scenarios/ref-single.yaml", str(tmp_path / "absent.log"), "--fidelity", "analytical")
    assert r.returncode == 2 and "absent.log: file not found" in r.stderr
