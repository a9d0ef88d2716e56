"""Mixture-of-experts: the MoE fields, the seeded routing load, the expert-parallel groups and
the per-rank expert parameter and activation terms.

Conventions (Megatron-Core, stated in ``docs/training.md``):

* EP does not multiply the GPU count: the ``dp * tp`` ranks of each pipeline stage are re-split
  for the expert layers as ``expert_tp`` (innermost) x ``ep`` x expert-data-parallel
  (``edp = dp * tp / (ep * expert_tp)``), over the dense index ``tp_rank + tp * dp_rank``. With
  TP inside a node and ``ep * expert_tp <= 8`` the EP group therefore stays inside the node.
* Each rank routes the tokens it holds (``b s / tp`` with sequence parallelism). The dispatch
  all-to-all sends ``tokens x top_k x hidden x 2`` bytes per rank (nccl-tests size: the whole send
  buffer), ``(ep - 1) / ep`` of it off the rank; the combine sends the same back; backward
  repeats both. Bytes are the mean load; the imbalance acts on the expert GEMMs.
* Imbalance: expert popularity is Zipf-like, ``p_e ~ 1 / rank_e ** router_skew`` with the
  ranking a permutation drawn from ``numpy.random.default_rng(simulation.seed)``; no expert gets
  more than every token (``p_e <= 1 / top_k``). Each EP rank waits for the most loaded rank: the
  step uses that rank's experts, each at its own token count (grouped GEMM at that M).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clustersim.errors import ClusterSimError


@dataclass(frozen=True)
class MoEDims:
    """The ``model.moe`` fields.

    Examples
    --------
    >>> m = MoEDims(experts=8, top_k=2, expert_ffn_hidden=64, first_dense_layers=1, moe_every=2)
    >>> [m.is_moe_layer(i) for i in range(5)]
    [False, True, False, True, False]
    """

    experts: int
    top_k: int
    expert_ffn_hidden: int
    shared_experts: int = 0
    moe_every: int = 1
    first_dense_layers: int = 0
    capacity_factor: float | None = None
    router_skew: float = 0.0
    implementation: str = "grouped"  # grouped | loop (model.moe.implementation)

    @classmethod
    def from_section(cls, s) -> "MoEDims | None":
        """From a :class:`clustersim.config.scenario.MoESection` (None stays None)."""
        if s is None:
            return None
        return cls(experts=s.experts, top_k=s.top_k, expert_ffn_hidden=s.expert_ffn_hidden,
                   shared_experts=s.shared_experts, moe_every=s.moe_every, first_dense_layers=s.first_dense_layers,
                   capacity_factor=s.capacity_factor, router_skew=s.router_skew,
                   implementation=getattr(s, "implementation", "grouped"))

    def is_moe_layer(self, index: int) -> bool:
        """Layer ``index`` (0-based) has routed experts."""
        i = index - self.first_dense_layers
        return i >= 0 and i % self.moe_every == 0  # Megatron's moe_layer_freq pattern

    def matmul_params(self, hidden: int, matrices: int, active: bool) -> float:
        """GEMM weights of one MoE MLP: router, shared experts, and the routed experts (all of them,
        or the ``top_k`` a token uses when ``active``); ``matrices``: 2 (GELU) or 3 (SwiGLU)."""
        routed = self.top_k if active else self.experts
        return hidden * self.experts + (routed + self.shared_experts) * matrices * hidden * self.expert_ffn_hidden


def expert_popularity(experts: int, top_k: int, skew: float, seed: int) -> np.ndarray:
    """Share of the routed token slots each expert receives (sums to 1; each at most ``1/top_k``).

    >>> expert_popularity(4, 1, 0.0, 0).tolist()
    [0.25, 0.25, 0.25, 0.25]
    >>> p = expert_popularity(8, 2, 1.0, 0); bool(abs(p.sum() - 1) < 1e-12 and p.max() <= 0.5)
    True
    """
    if skew <= 0:
        return np.full(experts, 1.0 / experts)
    rank = np.random.default_rng(seed).permutation(experts)
    weight = 1.0 / (rank + 1.0) ** skew
    p = weight / weight.sum()
    cap = 1.0 / top_k  # a token picks top_k distinct experts: no expert sees more than every token
    for _ in range(experts):  # water-filling: clip, hand the excess to the unclipped experts
        over = p > cap
        if not over.any():
            break
        excess = (p[over] - cap).sum()
        p[over] = cap
        free = p < cap
        p[free] += excess * p[free] / p[free].sum()
    return p


@dataclass(frozen=True)
class Routing:
    """Token counts of the expert GEMMs on the most loaded EP rank (per micro-batch)."""

    tokens_per_expert_mean: float  # mean tokens an expert GEMM sees (the uniform load)
    tokens_per_expert_max: float  # tokens of the most loaded expert of the job
    local_tokens: tuple[int, ...]  # tokens of each expert of the most loaded EP rank
    imbalance: float  # most loaded EP rank's tokens over the mean rank's
    dropped_fraction: float  # token slots dropped by capacity_factor (0 dropless)

    def report(self) -> dict:
        """The ``moe`` entry of the result."""
        return {"imbalance": self.imbalance, "tokens_per_expert_mean": self.tokens_per_expert_mean,
                "tokens_per_expert_max": self.tokens_per_expert_max,
                "tokens_per_expert_loaded_rank": list(self.local_tokens), "dropped_fraction": self.dropped_fraction}


def routing(moe: MoEDims, tokens_routed: float, ep: int, expert_tp: int, seed: int) -> Routing:
    """Expert loads for ``tokens_routed`` tokens per rank entering an MoE layer.

    The EP x expert-TP group pools ``tokens_routed * ep * expert_tp`` tokens; expert ``e`` gets
    ``p_e * top_k`` of them (:func:`expert_popularity`), capped at ``capacity_factor`` times the mean.

    >>> r = routing(MoEDims(experts=8, top_k=2, expert_ffn_hidden=4), 4096, 8, 1, 0)
    >>> r.tokens_per_expert_mean, r.imbalance, r.local_tokens
    (8192.0, 1.0, (8192,))
    """
    p = expert_popularity(moe.experts, moe.top_k, moe.router_skew, seed)
    slots = tokens_routed * ep * expert_tp * moe.top_k
    load = p * slots
    mean = slots / moe.experts
    dropped = 0.0
    if moe.capacity_factor is not None:
        capped = np.minimum(load, moe.capacity_factor * mean)
        dropped = float((load - capped).sum() / slots)
        load = capped
    local = moe.experts // ep
    per_rank = load.reshape(ep, local).sum(axis=1)
    worst = int(np.argmax(per_rank))
    return Routing(tokens_per_expert_mean=float(mean), tokens_per_expert_max=float(load.max()),
                   local_tokens=tuple(int(round(x)) for x in load[worst * local:(worst + 1) * local]),
                   imbalance=float(per_rank[worst] / (mean * local)), dropped_fraction=dropped)


def expert_groups(layout, ep: int, expert_tp: int, dp_rank: int, pp_rank: int, tp_rank: int = 0) -> tuple[list[int], list[int]]:
    """(EP group, expert-TP group) of the rank at (``tp_rank``, ``dp_rank``, ``pp_rank``).

    >>> from clustersim.workload.layout import Layout
    >>> lay = Layout({"tp": 2, "cp": 1, "ep": 1, "dp": 8, "pp": 1}, "tp-cp-ep-dp-pp")
    >>> expert_groups(lay, 4, 1, 2, 0)
    ([4, 5, 6, 7], [4])
    """
    tp = layout.sizes["tp"]
    index = tp_rank + tp * dp_rank  # position in the dp*tp plane of the stage, tp fastest

    def rank_at(x: int) -> int:
        return layout.rank(tp=x % tp, dp=x // tp, pp=pp_rank)

    etp_base = index - index % expert_tp
    ep_pos = (index // expert_tp) % ep
    ep_base = index - ep_pos * expert_tp
    return ([rank_at(ep_base + i * expert_tp) for i in range(ep)],
            [rank_at(etp_base + i) for i in range(expert_tp)])


def ep_node_groups(ep_group: list[int], host_of, rank: int | None = None) -> tuple[list[list[int]], list[list[int]]]:
    """(rail groups, node groups) of an EP group: the two stages of a node-limited dispatch.

    A node group is the EP ranks on one node (the NVLink stage); rail group ``j`` is the ``j``-th
    EP rank of every node (DeepEP sends a token over the network to "the GPU with the same
    in-node index on each target node", DeepSeek-V3 arXiv 2412.19437 section 3.2.2). The groups
    holding ``rank`` come first (the representative ones). The EP group must hold the same number
    of ranks on every node it spans (as DeepEP's internode buffer requires: ranks a multiple of
    the NVLink peers).

    >>> import numpy as np
    >>> ep_node_groups([0, 1, 2, 3, 4, 5, 6, 7], np.arange(8) // 4, rank=5)
    ([[1, 5], [0, 4], [2, 6], [3, 7]], [[4, 5, 6, 7], [0, 1, 2, 3]])
    """
    by_node: dict[int, list[int]] = {}
    for r in sorted(ep_group):
        by_node.setdefault(int(host_of[r]), []).append(r)
    nodes = [by_node[h] for h in sorted(by_node)]
    sizes = {len(n) for n in nodes}
    if len(sizes) != 1:
        raise ClusterSimError(
            f"node-limited routing needs the same number of EP ranks on every node of an EP group; ranks "
            f"{min(ep_group)}..{max(ep_group)} hold {'/'.join(str(len(n)) for n in nodes)} per node",
            field="parallelism.ep_max_nodes")
    rails = [[n[j] for n in nodes] for j in range(len(nodes[0]))]
    if rank is not None:
        rails.sort(key=lambda g: rank not in g)  # stable: the rank's own groups first
        nodes = sorted(nodes, key=lambda g: rank not in g)
    return rails, nodes


def target_nodes(top_k: int, max_nodes: int | None, nodes: int) -> int:
    """Network copies of one token in a node-limited dispatch: at most one per target node, and a
    token has at most ``min(top_k, max_nodes, nodes)`` target nodes. ``max_nodes`` None: ``top_k``
    (unrestricted routing sends every expert copy on its own).

    DeepSeek-V3's gate first picks the ``M`` nodes with the highest sums of their best
    ``top_k / M`` expert scores, then the ``top_k`` experts among them (arXiv 2412.19437 section
    2.1.2), so a token's experts usually cover all ``M`` nodes: the bound is what is sent.

    >>> target_nodes(8, 4, 8), target_nodes(8, None, 8), target_nodes(2, 4, 8), target_nodes(8, 4, 2)
    (4, 8, 2, 2)
    """
    if max_nodes is None:
        return top_k
    return min(top_k, max_nodes, nodes)


def inter_node_bytes(tokens: float, hidden: int, top_k: int, max_nodes: int | None, nodes: int,
                     act_bytes: int = 2) -> float:
    """Bytes one rank's dispatch (or combine) sends across the network for ``tokens`` routed tokens.

    ``target_nodes x hidden x act_bytes`` per token, of which ``(nodes - 1) / nodes`` go to remote
    nodes (the token's own node is a target as often as any other). Unrestricted (``max_nodes``
    None) this is the plain all-to-all's ``tokens x top_k x hidden x act_bytes x (N - 1) / N``;
    node-limited it equals that exactly when ``max_nodes >= top_k``.

    >>> inter_node_bytes(4096, 7168, 8, 4, 8) / inter_node_bytes(4096, 7168, 8, None, 8)
    0.5
    """
    if nodes <= 1:
        return 0.0
    return tokens * target_nodes(top_k, max_nodes, nodes) * hidden * act_bytes * (nodes - 1) / nodes


def ep_nodes_spanned(layout, ep: int, expert_tp: int, host_of) -> int:
    """Most nodes any EP group of ``layout`` spans (``host_of``: node of each rank).

    >>> import numpy as np
    >>> from clustersim.workload.layout import Layout
    >>> lay = Layout({"tp": 2, "cp": 1, "ep": 1, "dp": 16, "pp": 1}, "tp-cp-ep-dp-pp")
    >>> ep_nodes_spanned(lay, 16, 1, np.arange(32) // 8), ep_nodes_spanned(lay, 4, 1, np.arange(32) // 8)
    (2, 1)
    """
    return max(len({int(host_of[r]) for r in group}) for group in all_ep_groups(layout, ep, expert_tp))


def all_ep_groups(layout, ep: int, expert_tp: int) -> list[list[int]]:
    """Every EP group of ``layout``, each once.

    >>> from clustersim.workload.layout import Layout
    >>> all_ep_groups(Layout({"tp": 1, "cp": 1, "ep": 1, "dp": 4, "pp": 1}, "tp-cp-ep-dp-pp"), 2, 1)
    [[0, 1], [2, 3]]
    """
    tp, dp, pp = layout.sizes["tp"], layout.sizes["dp"], layout.sizes["pp"]
    out = []
    for stage in range(pp):
        seen: set[int] = set()
        for index in range(dp * tp):  # every rank of the stage's dp*tp plane
            group, _ = expert_groups(layout, ep, expert_tp, index // tp, stage, index % tp)
            if group[0] not in seen:
                seen.update(group)
                out.append(group)
    return out


def check_ep_max_nodes(scenario, host_of, file: str | None = None) -> None:
    """The rule of ``parallelism.ep_max_nodes`` that needs the cluster: at most the nodes an EP
    group spans (more would restrict nothing; say null for unrestricted routing)."""
    par = scenario.parallelism
    if scenario.model is None or par.ep_max_nodes is None:
        return
    from clustersim.workload.layout import Layout

    layout = Layout.from_parallelism(par)
    spanned = ep_nodes_spanned(layout, par.ep, par.expert_tp, host_of)
    if spanned > 1:
        for group in all_ep_groups(layout, par.ep, par.expert_tp):
            try:
                ep_node_groups(group, host_of)
            except ClusterSimError as exc:
                raise exc.with_file(file) if file else exc from None
    if par.ep_max_nodes > spanned:
        raise ClusterSimError(f"ep_max_nodes ({par.ep_max_nodes}) exceeds the {spanned} node(s) an EP group of "
                              f"{par.ep} ranks spans on this cluster (null: unrestricted routing)",
                              file=file, field="parallelism.ep_max_nodes")


def expert_params_per_rank(moe: MoEDims, hidden: int, matrices: int, ep: int, expert_tp: int) -> float:
    """Routed-expert weights one rank holds in one MoE layer (sharded by ep and expert_tp)."""
    return moe.experts / ep * matrices * hidden * moe.expert_ffn_hidden / expert_tp


def moe_mlp_activation_bytes(moe: MoEDims, hidden: int, mlp_in_factor: int, tokens_routed: float,
                             routing_: Routing, expert_tp: int, tp: int, act_bytes: int = 2) -> float:
    """Activation bytes the MoE MLP of one layer keeps for its backward on the most loaded rank.

    Router logits and probabilities (fp32, ``tokens x experts``), the permuted tokens the experts
    read (``hidden``), the first expert GEMM's output (``mlp_in_factor * f / expert_tp``) and the
    activation output (``f / expert_tp``) of every token the rank's experts take, plus the shared
    experts' (TP-split) intermediate tensors.
    """
    f_local = moe.expert_ffn_hidden / expert_tp
    expert_tokens = float(sum(routing_.local_tokens))
    router = tokens_routed * moe.experts * 4 * 2
    routed = expert_tokens * (hidden + (mlp_in_factor + 1) * f_local) * act_bytes
    shared_f = moe.shared_experts * moe.expert_ffn_hidden / tp
    shared = tokens_routed * tp * (mlp_in_factor + 1) * shared_f * act_bytes if shared_f else 0.0
    return router + routed + shared
