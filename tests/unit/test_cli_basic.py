"""The command line's contract: --help everywhere, one JSON document, exit code 2 on user errors."""

import json
from pathlib import Path

import pytest


@pytest.mark.parametrize("kind", ["scenario", "topology", "profile"])
def test_schema_is_one_json_document(kind, cli):
    r = cli("schema", kind)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert "properties" in doc


def test_schema_unknown_kind_exits_2(cli):
    r = cli("schema", "pizza")
    assert r.returncode == 2
    assert "unknown schema kind" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("content,needle", [
    ("", "empty"),
    ("name: x\ncluster: {topology: hgx-h200}\nmodel: {preset: gpt-1b}\nbogus: 1\n", "bogus: unknown key"),
    ("name: x\ncluster: {topology: hgx-h200}\nmodel: {preset: gpt-1b}\nparallelism: {tp: 5}\n", "must divide model.heads"),
    ("name: [\n", "YAML syntax error"),
    ("name: x\ncluster: {topology: no-such-box}\nmodel: {preset: gpt-1b}\n", "cluster.topology"),
])
def test_validate_bad_scenarios_exit_2(tmp_path, content, needle, cli):
    p = tmp_path / "s.yaml"
    p.write_text(content)
    r = cli("validate", str(p))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert needle in r.stderr
    assert str(p) in r.stderr
    assert "Traceback" not in r.stderr


def test_validate_binary_garbage_exit_2(tmp_path, cli):
    p = tmp_path / "g.yaml"
    p.write_bytes(bytes(range(256)))
    r = cli("validate", str(p))
    assert r.returncode == 2 and "binary" in r.stderr


def test_validate_bad_set_exit_2(tmp_path, cli):
    p = tmp_path / "s.yaml"
    p.write_text("name: x\ncluster: {topology: hgx-h200}\nmodel: {preset: gpt-1b}\n")
    r = cli("validate", str(p), "--set", "noequals")
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr


@pytest.mark.parametrize("command", [
    "topo list", "topo show", "topo draw", "topo import", "validate", "schema", "collective", "run",
    "calibrate bench", "calibrate slurm", "calibrate import-nccl-tests", "calibrate fit", "calibrate report",
])
def test_every_command_has_help_with_examples(command, cli):
    r = cli(*command.split(), "--help")
    assert r.returncode == 0, r.stderr
    assert "example" in r.stdout.lower(), f"{command} --help has no examples"


def test_run_flags_a_host_bound_step_only(cli):
    """The FSDP2 reference row (the host 84% of the step) gets the host-bound line; a GPU-bound DDP step does not."""
    def run(scenario):
        path = Path(__file__).resolve().parents[2] / "scenarios" / f"{scenario}.yaml"
        r = cli("run", str(path), "--fidelity", "analytical", env={"COLUMNS": "80"})
        assert r.returncode == 0, r.stderr
        return " ".join(r.stdout.split())

    assert "host-bound: 84 % of the step waits for the CPU" in run("ref-fsdp2")
    assert "host-bound" not in run("gpt-1b-ddp")
