"""Max-min fair fluid flow network (clustersim.engine.flow)."""

import numpy as np
import pytest

from clustersim.engine.flow import FlowNetwork, max_min_rates


def _rates(cap, paths, caps=None):
    ef = np.concatenate([np.full(len(p), i) for i, p in enumerate(paths)]).astype(int)
    el = np.concatenate(paths).astype(int)
    caps = np.full(len(paths), np.inf) if caps is None else np.asarray(caps, float)
    return max_min_rates(np.asarray(cap, float), ef, el, caps)


def test_classic_max_min_example():
    # links A(10), B(10); f0 uses A, f1 uses A and B, f2 uses B -> f0 = f1 = f2 = 5 ... then f2 takes B's rest
    r = _rates([10, 10], [np.array([0]), np.array([0, 1]), np.array([1])])
    assert r.tolist() == pytest.approx([5, 5, 5])
    r = _rates([10, 20], [np.array([0]), np.array([0, 1]), np.array([1])])
    assert r.tolist() == pytest.approx([5, 5, 15])


def test_caps_release_capacity_to_others():
    r = _rates([10], [np.array([0]), np.array([0])], caps=[2, np.inf])
    assert r.tolist() == pytest.approx([2, 8])


def test_flow_without_links_runs_at_cap():
    r = _rates([10], [np.array([], dtype=int), np.array([0])], caps=[3, np.inf])
    assert r.tolist() == pytest.approx([3, 10])


def test_advance_completes_and_accounts_bytes():
    net = FlowNetwork(np.array([10.0, 10.0]))
    net.add_flows([np.array([0]), np.array([0, 1])], np.array([10.0, 20.0]))
    net.recompute()
    dt = net.next_completion()
    assert dt == pytest.approx(2.0)
    done = net.advance(dt)
    assert done.tolist() == [0]
    net.recompute()
    assert net.rates([1]).tolist() == pytest.approx([10.0])
    assert net.next_completion() == pytest.approx(1.0)
    net.advance(1.0)
    assert net.n_active == 0
    assert net.link_bytes.tolist() == pytest.approx([30.0, 20.0])
    assert net.link_busy.tolist() == pytest.approx([3.0, 3.0])


def test_rates_never_exceed_capacity_random():
    rng = np.random.default_rng(1)
    for _ in range(30):
        L, Fn = 6, 12
        cap = rng.uniform(1, 10, L)
        paths = [rng.choice(L, size=rng.integers(1, 4), replace=False) for _ in range(Fn)]
        caps = np.where(rng.random(Fn) < 0.3, rng.uniform(0.1, 3, Fn), np.inf)
        r = _rates(cap, paths, caps)
        load = np.zeros(L)
        for p, x in zip(paths, r):
            load[p] += x
        assert (load <= cap * (1 + 1e-9)).all()
        assert (r <= caps * (1 + 1e-9)).all()
        # max-min: every flow is at its cap or crosses a saturated link where it is among the largest
        for i, p in enumerate(paths):
            if r[i] >= caps[i] * (1 - 1e-9):
                continue
            sat = [l for l in p if load[l] >= cap[l] * (1 - 1e-9)]
            assert sat, "unsaturated flow below its cap"
            assert any(all(r[i] >= r[j] * (1 - 1e-9) for j, q in enumerate(paths) if l in q) for l in sat), \
                f"{i=}, {p=}"
