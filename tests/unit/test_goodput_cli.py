"""``clustersim goodput``: one JSON document, the closed form inside the Monte-Carlo CI, exit 2 on bad input."""

import pytest


@pytest.mark.parametrize("args,needle", [
    (["scenarios/ddp-mlp.yaml", "--mtbf-gpu-hours", "5"], "needs a model"),
    (["scenarios/gpt-1b-ddp.yaml", "--mtbf-gpu-hours", "-5"], "--mtbf-gpu-hours: -5 is outside 1..1e+09"),  # bounds of issue 37
    (["scenarios/gpt-1b-ddp.yaml"], "no failure rate"),
])
def test_goodput_bad_input_exits_2(args, needle, cli):
    r = cli("goodput", *args, "--ckpt-write-GBps", "1", "--restart-min", "1", "--run-days", "1")
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
