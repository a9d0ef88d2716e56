"""Topology graphs, presets and structured routing (Contract 1 of docs/architecture.md).

>>> from clustersim.topology import load_cluster
>>> c = load_cluster("hgx-h200", gpus=2)
>>> c.gpus
['h0.gpu0', 'h0.gpu1']
"""

from clustersim.topology.cluster import Cluster, load_cluster
from clustersim.topology.graphs import FatTree, NodeTemplate, compile_node, node_graph

__all__ = ["Cluster", "FatTree", "NodeTemplate", "compile_node", "load_cluster", "node_graph"]
