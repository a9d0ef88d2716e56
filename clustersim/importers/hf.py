"""``clustersim scenario from-hf CONFIG.json``: a Hugging Face model config as a runnable scenario.

The architecture is read by :func:`clustersim.config.hf.model_fields`; this module adds the cluster,
the batch and the degrees (:func:`clustersim.importers.build.build_scenario`) and reports the
parameter count the scenario's model holds, with DeepSeek's multi-token-prediction layers counted apart
(they are trained beside the main model but are not part of it: DeepSeek-V3's 671B exclude its 11.5B
MTP module, the released checkpoint's 685B include it).
"""

from __future__ import annotations

from pathlib import Path

from clustersim.config.base import validate
from clustersim.config.hf import model_fields
from clustersim.config.input_text import read_input_json
from clustersim.config.scenario import ModelSection
from clustersim.importers.build import Imported, build_scenario, cluster_gpus, fit_global_batch
from clustersim.workload.model import ModelDims


def parameter_report(model: dict, mtp_layers: int = 0) -> dict:
    """Total and active parameters of a ``model:`` section, and the multi-token-prediction layers apart.

    One MTP module (DeepSeek-V3 section 2.2) is a transformer layer like the last one (an MoE layer),
    its projection of the concatenated embedding and hidden state (``2h x h``) and three RMSNorms;
    it shares the embedding and the output head with the main model.
    """
    dims = ModelDims.from_section(validate(ModelSection, model))
    out = {"total_params": dims.total_params, "active_params": dims.active_params, "layers": dims.layers}
    if mtp_layers:
        last = dims.layers - 1
        layer = (dims.attention_matmul_params + dims.layer_other_params
                 + (dims.moe.matmul_params(dims.hidden, dims.mlp_matrices, False) if dims.is_moe_layer(last)
                    else dims.mlp_matrices * dims.hidden * dims.ffn_hidden))
        out["mtp_layers"] = mtp_layers
        out["mtp_params"] = mtp_layers * (layer + 2 * dims.hidden * dims.hidden + 3 * dims.hidden)
    return out


def scenario_from_hf(path: str | Path, *, topology: str, gpus: int | None = None, nodes: int | None = None,
                     seq_len: int | None = None, global_batch: int | None = None, micro_batch: int = 1,
                     tp: int = 1, pp: int = 1, cp: int = 1, ep: int = 1, name: str | None = None) -> Imported:
    """The scenario of a ``config.json`` on ``topology`` (dp from the GPU count; see the module docstring).

    Raises
    ------
    ClusterSimError
        The file cannot be read, its architecture is not supported, or the degrees do not fit (file, field).
    """
    cfg = read_input_json(path, what="Hugging Face config")
    hf = model_fields(cfg, file=str(path))
    model = dict(hf.fields)
    if seq_len is not None:
        model["seq_len"] = seq_len
    n = cluster_gpus(topology, gpus, nodes)
    dp = n // max(1, tp * pp * cp)
    par: dict = {"tp": tp, **{k: v for k, v in (("pp", pp), ("cp", cp), ("ep", ep)) if v != 1}}
    if tp > 1:
        par["sequence_parallel"] = True  # Megatron-LM's and torchtitan's choice with TP
    training = {"global_batch": fit_global_batch(global_batch, micro_batch, dp), "micro_batch": micro_batch}
    stem = name or Path(path).stem.lower().replace(".", "-")
    data = build_scenario(stem, model=model, topology=topology, gpus=gpus, nodes=nodes, training=training,
                          parallelism=par,
                          description=f"From the Hugging Face config {Path(path).name} ({hf.model_type}).",
                          source=str(path))
    return Imported(data, hf.warnings, hf.notes, parameter_report(model, hf.mtp_layers))
