"""`clustersim collective` command line."""

import json

import pytest
from typer.testing import CliRunner

from clustersim.cli import app

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
        assert y["time_s"] == pytest.approx(x["time_s"], rel=0.01), f"{x=}, {y=}"


def test_table_and_options():
    r = run("collective", "all_reduce", "--topology", "dgx-h100", "--sizes", "1KiB:1MiB:x32", "--nvls", "off",
            "--algorithm", "ring", "--protocol", "ll")
    assert r.exit_code == 0, r.output
    assert "busbw" in r.output and "1048576" in r.output
    r = run("collective", "all_reduce", "--topology", "dgx-h100", "--size", "1GiB", "--p2p", "off", "--json")
    assert json.loads(r.stdout)["busbw_GBps"] < 100


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


# -- uncertainty band (issue 5: predictions carry the profile's uncertainty)
def test_json_band_from_the_profile_entry_cis(shared_cluster, shared_profile):
    from clustersim.collectives.uncertainty import predict
    from clustersim.collectives import CollectiveModel

    d = json.loads(run("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2", "--size", "1GiB",
                       "--json").stdout)
    assert d["source"] == "profile"
    assert d["time_lo_s"] < d["time_s"] < d["time_hi_s"]
    # the band is the entry's own 95% band, moved onto the reported time (which adds the kernel gap)
    c = shared_cluster("hgx-h200", gpus=2)
    m = CollectiveModel(c, shared_profile(c.default_profile))
    entry, _ = m.match_entry("all_reduce", "auto", "auto", 2, "intra", 2**30)
    t, lo, hi = predict(entry, 2**30)
    assert d["time_s"] - d["time_lo_s"] == pytest.approx(t - lo, rel=1e-9)
    assert d["time_hi_s"] - d["time_s"] == pytest.approx(hi - t, rel=1e-9)
    assert d["time_s"] - t == pytest.approx(m.launch_s, rel=1e-9)
    # flow fidelity carries the same band (uncontended: the same time)
    f = json.loads(run("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2", "--size", "1GiB",
                       "--fidelity", "flow", "--json").stdout)
    assert f["time_hi_s"] - f["time_lo_s"] == pytest.approx(d["time_hi_s"] - d["time_lo_s"], rel=1e-6)


def test_no_band_without_an_entry_or_without_cis(tmp_path):
    d = json.loads(run("collective", "all_reduce", "--topology", "dgx-h100", "--size", "1GiB", "--json").stdout)
    assert d["source"] == "model" and "time_lo_s" not in d and "time_hi_s" not in d
    prof = tmp_path / "p.yaml"
    prof.write_text("name: nocis\ncollectives:\n  - {op: all_reduce, ranks: 2, segments: [{alpha_us: 10, "
                    "algbw_GBps: 300}]}\n")
    d = json.loads(run("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2", "--size", "1GiB",
                       "--profile", str(prof), "--json").stdout)
    assert d["source"] == "profile" and "time_lo_s" not in d


def test_table_shows_the_band():
    r = run("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2", "--sizes", "1MiB:1GiB:x32")
    assert r.exit_code == 0, r.output
    assert "95% band" in r.output
    r = run("collective", "all_reduce", "--topology", "dgx-h100", "--sizes", "1MiB:1GiB:x32")
    assert "95% band" not in r.output
