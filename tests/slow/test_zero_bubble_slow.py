"""The new pipeline schedules at both fidelities (moved from tests/unit/test_zero_bubble.py): each schedule's step
simulated twice."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

NEW = [("zb_h1", 1), ("zb_v", 2), ("dualpipe", 1), ("dualpipe_v", 2)]


def test_both_fidelities_play_the_new_schedules(tmp_path):
    """The flow executor plays the same op order with the network: it agrees with the analytical one."""
    from clustersim.simulate.run import run_scenario

    path = tmp_path / "s.yaml"
    path.write_text("""name: zb
cluster: {topology: hgx-h200}
model: {layers: 16, hidden: 1024, heads: 8, vocab: 512, seq_len: 512}
training: {global_batch: 16, micro_batch: 1}
parallelism: {pp: 4, dp: 2, schedule: dualpipe}
""")
    for sched, v in NEW:
        over = [f"parallelism.schedule={sched}", f"parallelism.virtual_stages={v}"]
        a = run_scenario(path, "analytical", overrides=over)
        f = run_scenario(path, "flow", overrides=over)
        assert f.step_time_s == pytest.approx(a.step_time_s, rel=0.02)
        assert a.breakdown["comm_pp"] > 0 and f.breakdown["comm_pp"] > 0
