"""The budget's estimates follow what is really built, so a refusal is not off by orders of magnitude."""

from __future__ import annotations

import pytest

from clustersim.budget import check_bound, cluster_bytes
from clustersim.config.scenario import estimate_events
from clustersim.errors import ClusterSimError
from clustersim.simulate.resolve import resolve_scenario
from conftest import REPO


def _counted_events(rs) -> int:
    from clustersim.workload.compute import ComputeModel
    from clustersim.workload.transformer import TransformerStep

    cm = ComputeModel.from_profile(rs.profile.compute, rs.cluster.gpu_spec, "bf16")
    graph = TransformerStep(rs.scenario, cm).build()
    return sum(len(op.segments) if op.segments else 1 for op in graph.ops)


@pytest.mark.parametrize("name,overrides", [
    ("gpt3-175b", []), ("llama3-405b", []), ("hybrid-tp2-pp2-dp2", []), ("ref-fsdp2", []),
    ("hybrid-tp2-pp2-dp2", ["training.global_batch=320"]), ("gpt-1b-ddp", ["training.global_batch=8000"]),
])
def test_event_estimate_within_a_small_factor(name: str, overrides: list[str]) -> None:
    rs = resolve_scenario(REPO / "scenarios" / f"{name}.yaml", overrides)
    est = estimate_events(rs.scenario, rs.cluster.n_gpus)
    counted = _counted_events(rs)
    assert 0.8 * counted <= est <= 2.5 * counted, (est, counted)


def test_cluster_memory_estimate_is_an_upper_bound_of_the_link_arrays() -> None:
    import tracemalloc

    from clustersim.topology import load_cluster

    tracemalloc.start()
    c = load_cluster("dgx-h100-superpod", nodes=512)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    est = cluster_bytes(c.n_hosts, c.template.n_groups, c.fabric.n_links)
    assert peak <= est <= 3 * peak, (peak, est)


def test_bound_message_gives_the_bound_and_the_reason() -> None:
    with pytest.raises(ClusterSimError) as exc:
        check_bound("layers", 20_000, field="model.layers")
    assert "20,000 layers exceed the bound of 10,000 (10x the deepest" in str(exc.value)
