"""`clustersim collective` command line."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clustersim.cli import app

DATA = Path(__file__).resolve().parents[1] / "data"
runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_help_has_examples():
    r = run("collective", "--help")
    assert r.exit_code == 0
    assert "Examples" in r.output and "--sizes" in r.output


def test_json_single_size():
    r = run("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2", "--size", "1GiB", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    for k in ("op", "gpus", "size_bytes", "algorithm", "protocol", "time_s", "algbw_GBps", "busbw_GBps"):
        assert k in d
    assert d["gpus"] == 2 and d["size_bytes"] == 2**30
    assert d["busbw_GBps"] == pytest.approx(330, rel=0.05)


def test_json_sweep_is_a_list_and_flow_agrees():
    a = json.loads(run("collective", "all_gather", "--topology", "dgx-h100", "--sizes", "1MiB:64MiB:x4",
                       "--json").stdout)
    f = json.loads(run("collective", "all_gather", "--topology", "dgx-h100", "--sizes", "1MiB:64MiB:x4",
                       "--fidelity", "flow", "--json").stdout)
    assert [x["size_bytes"] for x in a] == [2**20, 2**22, 2**24, 2**26]
    for x, y in zip(a, f):
        assert y["time_s"] == pytest.approx(x["time_s"], rel=0.01)


def test_table_and_options():
    r = run("collective", "all_reduce", "--topology", "dgx-h100", "--sizes", "1KiB:1MiB:x32", "--nvls", "off",
            "--algorithm", "ring", "--protocol", "ll")
    assert r.exit_code == 0, r.output
    assert "busbw" in r.output and "1048576" in r.output
    r = run("collective", "all_reduce", "--topology", "dgx-h100", "--size", "1GiB", "--p2p", "off", "--json")
    assert json.loads(r.stdout)["busbw_GBps"] < 100


def test_plot_with_measured_log(tmp_path):
    out = tmp_path / "bw.png"
    r = run("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2", "--sizes", "8:4GiB",
            "--plot", str(out), "--measured", str(DATA / "h200x2" / "nt_all_reduce.txt"))
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 1000


@pytest.mark.parametrize("args", [
    ["all_reduce", "--topology", "dgx-h100", "--size", "1GiB", "--sizes", "1:2"],
    ["all_reduce", "--topology", "dgx-h100"],
    ["allreduce", "--topology", "dgx-h100", "--size", "1"],
    ["all_reduce", "--topology", "dgx-h100", "--size", "1", "--protocol", "fast"],
    ["all_reduce", "--topology", "dgx-h100", "--size", "1", "--nvls", "maybe"],
    ["all_reduce", "--topology", "dgx-h100", "--size", "1", "--fidelity", "exact"],
    ["all_reduce", "--topology", "dgx-h100", "--size", "12XB"],
    ["all_reduce", "--topology", "dgx-h100", "--gpus", "0", "--size", "1"],
    ["all_reduce", "--topology", "nope", "--size", "1"],
    ["broadcast", "--topology", "dgx-h100", "--size", "1", "--algorithm", "tree"],
    ["all_reduce", "--topology", "dgx-h100", "--size", "1", "--measured", "x.log"],
])
def test_bad_arguments_exit_2(args):
    from clustersim.cli import main

    with pytest.raises(SystemExit) as e:
        main(["collective", *args])
    assert e.value.code == 2
