"""``clustersim scenario from-torchtitan JOB.toml``: a torchtitan job file as a scenario.

The model is ``[model] name`` + ``flavor`` from torchtitan's published model args (``llama3``:
``debugmodel``, ``8B``, ``70B``, ``405B`` of ``torchtitan/models/llama3/__init__.py``; the MLP width by
its ``compute_ffn_hidden_dim``: ``multiple_of x ceil(ffn_dim_multiplier x 8 dim / 3 / multiple_of)``).
The sections read, as torchtitan defines them (``torchtitan/config/job_config.py``):

* ``[training]``: ``local_batch_size`` (older files: ``batch_size``) per data-parallel rank,
  ``global_batch_size`` (default: local x dp), ``seq_len``, ``compile`` (older files);
* ``[parallelism]``: ``data_parallel_shard_degree`` (-1: the GPUs left over; > 1 is FSDP2, ZeRO-3),
  ``data_parallel_replicate_degree``, ``tensor_parallel_degree`` (with sequence parallelism, as torchtitan
  always runs it), ``pipeline_parallel_degree`` and ``pipeline_parallel_schedule``,
  ``context_parallel_degree``, ``enable_async_tensor_parallel``;
* ``[activation_checkpoint]``: ``mode`` none / selective / full (``selective_ac_option``: ``op`` or a layer period);
* ``[compile]``: ``enable`` (compiled: fused kernels; eager: PyTorch's separate kernels);
* ``[float8]`` / ``[quantize.linear.float8]`` and ``[model] converters``: Float8 linears (costed at 16-bit, noted).

``--section.key=value`` (or ``--section.key value``) overrides apply to the file first, as torchtitan's
own command line does.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from clustersim.config.input_text import read_input_text
from clustersim.errors import ClusterSimError
from clustersim.importers.build import Imported, build_scenario, cluster_gpus
from clustersim.importers.hf import parameter_report

_LLAMA3 = {"mlp": "swiglu", "norm": "rmsnorm", "position_embedding": "rope", "attention": "flash", "bias": False,
           "tied_embeddings": False, "vocab": 128256}
#: (dim, layers, heads, kv_heads, multiple_of, ffn_dim_multiplier, vocab) of torchtitan's llama3 flavors
FLAVORS = {
    ("llama3", "debugmodel"): (256, 6, 16, 16, 256, None, 2048),
    ("llama3", "8B"): (4096, 32, 32, 8, 1024, 1.3, 128256),
    ("llama3", "70B"): (8192, 80, 64, 8, 4096, 1.3, 128256),
    ("llama3", "405B"): (16384, 126, 128, 8, 4096, 1.2, 128256),
}
_SCHEDULES = {"1F1B": "1f1b", "GPipe": "gpipe", "Interleaved1F1B": "interleaved", "ZBVZeroBubble": "zb_v",
              "InterleavedZeroBubble": "interleaved", "DualPipeV": "dualpipe_v"}


def ffn_hidden_dim(dim: int, multiple_of: int, multiplier: float | None) -> int:
    """torchtitan's (and Meta's Llama) SwiGLU width.

    >>> ffn_hidden_dim(4096, 1024, 1.3), ffn_hidden_dim(8192, 4096, 1.3), ffn_hidden_dim(16384, 4096, 1.2)
    (14336, 28672, 53248)
    """
    hidden = int(2 * 4 * dim / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * math.ceil(hidden / multiple_of)


def apply_overrides(job: dict, overrides: list[str]) -> dict:
    """torchtitan's ``--section.key=value`` / ``--section.key value`` overrides (values parsed as TOML).

    >>> apply_overrides({"training": {"seq_len": 8192}}, ["--training.seq_len=4096", "--compile.enable", "true"])
    {'training': {'seq_len': 4096}, 'compile': {'enable': True}}
    """
    items, i = [], 0
    while i < len(overrides):
        word = overrides[i]
        if not word.startswith("--") or "." not in word:
            raise ClusterSimError(f"override {word!r}: expected --section.key=value", field="overrides")
        key, eq, value = word[2:].partition("=")
        if not eq:
            if i + 1 >= len(overrides):
                raise ClusterSimError(f"override {word!r} has no value", field="overrides")
            value, i = overrides[i + 1], i + 1
        items.append((key, value))
        i += 1
    for key, value in items:
        try:
            parsed = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            parsed = value  # a bare word: the text itself
        node = job
        *parents, last = key.split(".")
        for k in parents:
            node = node.setdefault(k, {})
        node[last] = parsed
    return job


def _model(job: dict, file: str) -> tuple[dict, list[str]]:
    m = job.get("model", {})
    key = (m.get("name"), m.get("flavor"))
    if key not in FLAVORS:
        known = ", ".join(f"{n} {f}" for n, f in FLAVORS)
        raise ClusterSimError(f"model {key[0]!r} flavor {key[1]!r} is not one clustersim knows ({known}); "
                              "for another model use clustersim scenario from-hf", file=file, field="model.flavor")
    dim, layers, heads, kv, mult, ffn_mult, vocab = FLAVORS[key]
    notes = []
    conv = m.get("converters") or []
    if "float8" in (conv if isinstance(conv, list) else [conv]):
        notes.append("Float8 linears ([model] converters) are costed at 16-bit")
    return {**_LLAMA3, "layers": layers, "hidden": dim, "heads": heads, "kv_heads": kv,
            "ffn_hidden": ffn_hidden_dim(dim, mult, ffn_mult), "vocab": vocab}, notes


def _parallel(job: dict, n: int, file: str, notes: list[str]) -> dict:
    p = job.get("parallelism", {})
    tp, pp, cp = (int(p.get(k, 1)) for k in ("tensor_parallel_degree", "pipeline_parallel_degree",
                                                "context_parallel_degree"))
    rep, shard = int(p.get("data_parallel_replicate_degree", 1)), int(p.get("data_parallel_shard_degree", -1))
    if shard == -1:
        if n % (tp * pp * cp * rep):
            raise ClusterSimError(f"tp*pp*cp*replicate = {tp * pp * cp * rep} does not divide the {n} GPUs",
                                  file=file, field="parallelism")
        shard = n // (tp * pp * cp * rep)
    par: dict[str, Any] = {"dp": rep * shard, "tp": tp, "pp": pp, "cp": cp, "zero": 3 if shard > 1 else 0}
    if int(p.get("expert_parallel_degree", 1)) > 1:
        raise ClusterSimError("expert parallelism needs an MoE model (llama3 is dense)", file=file,
                              field="parallelism.expert_parallel_degree")
    if rep > 1 and shard > 1:
        notes.append(f"HSDP (replicate {rep} x shard {shard}) is simulated as FSDP over all {rep * shard} ranks")
    if tp > 1:
        par["sequence_parallel"] = True
        par["tp_comm_overlap"] = bool(p.get("enable_async_tensor_parallel", False))
    if pp > 1:
        sched = p.get("pipeline_parallel_schedule", "1F1B")
        if sched not in _SCHEDULES:
            raise ClusterSimError(f"schedule {sched!r} not known ({', '.join(_SCHEDULES)})", file=file,
                                  field="parallelism.pipeline_parallel_schedule")
        par["schedule"] = _SCHEDULES[sched]
    return par


def _training(job: dict, dp: int, file: str, notes: list[str]) -> tuple[dict, int]:
    t = job.get("training", {})
    local = int(t.get("local_batch_size", t.get("batch_size", 8)))
    global_batch = int(t.get("global_batch_size", -1))
    ac = job.get("activation_checkpoint", {})
    mode = ac.get("mode", "selective")
    if mode not in ("none", "selective", "full"):
        raise ClusterSimError(f"mode {mode!r} not known (none, selective, full)", file=file,
                              field="activation_checkpoint.mode")
    if mode == "selective" and str(ac.get("selective_ac_option", "2")) != "op":
        notes.append(f"selective_ac_option {ac.get('selective_ac_option', '2')}: every layer is recomputed "
                     "selectively (per-layer period not read)")
    compiled = bool(job.get("compile", {}).get("enable", t.get("compile", False)))
    training = {"global_batch": global_batch if global_batch > 0 else local * dp, "micro_batch": local,
                "recompute": mode, "kernel_fusion": "fused" if compiled else "none"}
    return training, int(t.get("seq_len", 2048))


def scenario_from_torchtitan(path: str | Path, *, topology: str, gpus: int | None = None, nodes: int | None = None,
                             overrides: list[str] | None = None, name: str | None = None) -> Imported:
    """The scenario of a torchtitan job TOML on ``topology`` (see the module docstring)."""
    file = str(path)
    try:
        job = tomllib.loads(read_input_text(path, what="torchtitan job file"))
    except tomllib.TOMLDecodeError as exc:
        raise ClusterSimError(f"not valid TOML: {exc}", file=file) from None
    job = apply_overrides(job, list(overrides or []))
    model, notes = _model(job, file)
    n = cluster_gpus(topology, gpus, nodes)
    par = _parallel(job, n, file, notes)
    training, model["seq_len"] = _training(job, par["dp"], file, notes)
    known = {"job", "profiling", "metrics", "model", "optimizer", "lr_scheduler", "training", "parallelism",
             "checkpoint", "activation_checkpoint", "compile", "float8", "quantize", "validation", "comm",
             "memory_estimation", "fault_tolerance", "experimental"}
    warnings = [f"section [{k}] not read" for k in job if k not in known]
    stem = name or Path(path).stem.replace("_", "-")
    data = build_scenario(stem, model=model, topology=topology, gpus=gpus, nodes=nodes, training=training,
                          parallelism=par, description=f"From the torchtitan job {Path(path).name}.", source=file)
    report = parameter_report(model)
    report["layout"] = {k: par.get(k, 1) for k in ("dp", "tp", "pp", "cp")}
    return Imported(data, warnings, notes, report)
