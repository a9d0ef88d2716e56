"""``clustersim scenario from-torch MODULE:FACTORY``: any PyTorch model as a DDP training job.

The model is built on the meta device (shapes only: no memory, no GPU) and one training step is run
on a meta input of ``--input-shape``: the forward, a sum of the output as the loss, and the backward.
PyTorch's own counter (:class:`torch.utils.flop_counter.FlopCounterMode`) gives the FLOPs of every op
(a GEMM ``m x n x k``: ``2 m n k``; the input's gradient is not computed, as autograd skips it), and a
dispatch mode beside it adds up the bytes each op reads and writes (its tensor inputs and outputs; views
move nothing). The job each rank runs, once per iteration (PyTorch DDP):

* forward, backward: compute phases of those FLOPs and bytes (roofline with the profile);
* gradient all-reduce: DDP's buckets (``bucket_cap_mb`` 25 MiB, the first 1 MiB: ``dist._DEFAULT_FIRST_BUCKET_BYTES``)
  of the gradient bytes, one all-reduce each, after the backward (DDP overlaps them with it: this job is
  the upper bound of the step, said in its description);
* optimizer: SGD reads the gradient and reads and writes the weight (3 x 4 bytes per parameter; AdamW 7).

Parameters per top-level child are reported (``report.layers``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from clustersim.errors import ClusterSimError
from clustersim.importers.build import Imported, build_scenario, cluster_gpus

MiB = 2**20
FIRST_BUCKET_BYTES = 1 * MiB  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
BUCKET_BYTES = 25 * MiB  # DDP bucket_cap_mb=25
_VIEWS = ("view", "_unsafe_view", "expand", "t", "transpose", "permute", "detach", "as_strided", "alias",
          "unsqueeze", "squeeze", "slice", "select", "reshape", "split", "unbind")
_DTYPE = {"fp32": ("float32", 4), "bf16": ("bfloat16", 2)}


def load_factory(spec: str):
    """The callable named by ``MODULE:FACTORY`` (a module on the path, or ``path/to/file.py:FACTORY``)."""
    mod_name, sep, attr = spec.partition(":")
    if not sep or not mod_name or not attr:
        raise ClusterSimError(f"{spec!r}: expected MODULE:FACTORY, e.g. mymodels:make_mlp", field="factory")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            if not path.is_file():
                raise ClusterSimError("file not found", file=mod_name)
            loader = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            if "" not in sys.path:
                sys.path.insert(0, "")
            module = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ClusterSimError(f"cannot import {mod_name!r}: {exc}", field="factory") from None
    if not hasattr(module, attr):
        raise ClusterSimError(f"module {mod_name!r} has no {attr!r}", field="factory")
    return getattr(module, attr)


def parse_shape(text: str) -> tuple[int, ...]:
    """``64x784`` or ``32,3,32,32`` as a shape.

    >>> parse_shape("32x3x32x32")
    (32, 3, 32, 32)
    """
    try:
        shape = tuple(int(p) for p in text.replace(",", "x").split("x"))
    except ValueError:
        raise ClusterSimError(f"{text!r}: expected sizes like 64x784", field="--input-shape") from None
    if not shape or min(shape) < 1:
        raise ClusterSimError(f"{text!r}: every size must be >= 1", field="--input-shape")
    return shape


def trace(factory, shape: tuple[int, ...], input_dtype: str = "float32", dtype: str = "fp32") -> dict:
    """FLOPs and bytes of the forward and backward, parameters (total and per top-level child) of one step."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    class Bytes(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.__name__.split(".")[0] not in _VIEWS:
                leaves = torch.utils._pytree.tree_leaves((args, kwargs or {}, out))
                self.total += sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))
            return out

    wdtype = getattr(torch, _DTYPE[dtype][0])
    try:
        with torch.device("meta"):
            model = factory().to(dtype=wdtype)
        x = torch.zeros(shape, device="meta", dtype=getattr(torch, input_dtype))
        if x.is_floating_point():
            x = x.to(wdtype)
        parts = {}
        for phase in ("forward", "backward"):
            with FlopCounterMode(display=False) as flops, Bytes() as nbytes:
                if phase == "forward":
                    out = model(x)
                    out = out[0] if isinstance(out, (tuple, list)) else out
                    loss = out.float().sum()
                else:
                    loss.backward()
            parts[phase] = (float(flops.get_total_flops()), float(nbytes.total))
    except ClusterSimError:
        raise
    except Exception as exc:  # the user's model: its own error, named, never a traceback
        raise ClusterSimError(f"tracing the model on the meta device failed: {type(exc).__name__}: {exc}",
                              field="factory") from None
    params = [p for p in model.parameters() if p.requires_grad]
    layers = {name: sum(p.numel() for p in child.parameters()) for name, child in model.named_children()}
    return {"forward": parts["forward"], "backward": parts["backward"], "params": sum(p.numel() for p in params),
            "tensors": len(params), "layers": layers}


def ddp_buckets(grad_bytes: float) -> list[float]:
    """DDP's gradient buckets: 1 MiB first, then 25 MiB, the last one the rest.

    >>> [round(b / MiB, 2) for b in ddp_buckets(60 * MiB)]
    [1.0, 25.0, 25.0, 9.0]
    """
    out, left = [], grad_bytes
    for cap in [FIRST_BUCKET_BYTES] + [BUCKET_BYTES] * int(grad_bytes // BUCKET_BYTES + 1):
        if left <= 0:
            break
        out.append(min(cap, left))
        left -= out[-1]
    return out


def scenario_from_torch(factory_spec: str, *, input_shape: str, input_dtype: str = "float32", dtype: str = "fp32",
                        topology: str = "hgx-h200", gpus: int | None = None, nodes: int | None = None,
                        steps: int = 10, optimizer: str = "sgd", name: str | None = None) -> Imported:
    """A DDP job of the model ``factory_spec`` builds, one micro-batch of ``input_shape`` per rank (see the
    module docstring)."""
    if dtype not in _DTYPE:
        raise ClusterSimError(f"{dtype!r}: use fp32 or bf16", field="--dtype")
    if input_dtype not in ("float32", "int64"):
        raise ClusterSimError(f"{input_dtype!r}: use float32 or int64", field="--input-dtype")
    shape = parse_shape(input_shape)
    t = trace(load_factory(factory_spec), shape, input_dtype, dtype)
    width = _DTYPE[dtype][1]
    grad_bytes = t["params"] * width
    phases = [{"name": "forward", "compute": {"flops": t["forward"][0], "bytes": t["forward"][1], "dtype": dtype}},
              {"name": "backward", "compute": {"flops": t["backward"][0], "bytes": t["backward"][1], "dtype": dtype}}]
    n = cluster_gpus(topology, gpus, nodes)
    if n > 1:
        phases += [{"name": f"grad all_reduce {i}", "collective": {"op": "all_reduce", "size": int(b), "group": "all"}}
                   for i, b in enumerate(ddp_buckets(grad_bytes))]
    per_param = 12 if optimizer == "sgd" else 28  # SGD: grad r, weight r/w; AdamW: + m, v r/w (fp32)
    phases.append({"name": f"{optimizer} step", "compute": {"bytes": float(t["params"] * per_param)}})
    job = {"iterations": steps, "samples_per_iteration": float(shape[0] * n), "phases": phases}
    stem = name or factory_spec.rsplit(":", 1)[-1].replace("_", "-")
    data = build_scenario(stem, job=job, topology=topology, gpus=gpus, nodes=nodes,
                          description=f"DDP job of {factory_spec} traced on the meta device, input {input_shape} per "
                                      "rank; gradient all-reduces after the backward (DDP overlaps them: an upper bound).")
    report = {"total_params": t["params"], "active_params": t["params"], "layers": t["layers"],
              "forward_flops": t["forward"][0], "backward_flops": t["backward"][0], "grad_bytes": grad_bytes}
    return Imported(data, [], [], report)
