"""``clustersim scenario from-hf | from-megatron | from-torchtitan | from-torch``: scenarios from users' own files.

Each command reads one file (:mod:`clustersim.importers`), writes the scenario YAML (``-o FILE``, or
stdout), and names on stderr what it did not read. See docs/inputs.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import err_console, print_json

app = typer.Typer(help="Write a scenario from a Hugging Face config, Megatron arguments, a torchtitan job or a "
                  "PyTorch model.", no_args_is_help=True, add_completion=False)

TOPOLOGY = typer.Option("hgx-h200", "--topology", help="Shipped topology name or topology file.")
GPUS = typer.Option(None, "--gpus", help="Use the first N GPUs of the cluster.")
NODES = typer.Option(None, "--nodes", help="Replicate the topology's node N times.")
OUTPUT = typer.Option(None, "-o", "--output", help="Write the scenario YAML here (default: stdout).")
AS_JSON = typer.Option(False, "--json", help="Print scenario, warnings, notes and report as one JSON document.")
NAME = typer.Option(None, "--name", help="Scenario name (default: from the file name).")


def render_imported(imported, output: Optional[Path], as_json: bool) -> None:
    """Write the scenario (``-o`` or stdout), the warnings and notes on stderr, the parameter count."""
    if as_json:
        if output is not None:
            output.write_text(imported.yaml())
        print_json(imported.to_dict())
        return
    for w in imported.warnings:
        err_console.print(f"warning: {w}", highlight=False, markup=False, soft_wrap=True)
    for n in imported.notes:
        err_console.print(f"note: {n}", highlight=False, markup=False, soft_wrap=True)
    r = imported.report

    def count(n: float) -> str:
        return f"{n / 1e9:.2f}B" if n >= 1e9 else (f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n:,.0f}")

    if "total_params" in r:
        mtp = f" (+ {count(r['mtp_params'])} in {r['mtp_layers']} MTP layer(s), apart)" if r.get("mtp_params") else ""
        active = f", {count(r['active_params'])} active" if r["active_params"] != r["total_params"] else ""
        layout = "".join(f" {k}{v}" for k, v in r.get("layout", {}).items())
        err_console.print(f"{count(r['total_params'])} parameters{active}{mtp}{layout}", highlight=False,
                          markup=False, soft_wrap=True)
    if output is None:
        sys.stdout.write(imported.yaml())
    else:
        output.write_text(imported.yaml())
        err_console.print(f"wrote {output}", highlight=False, markup=False)


@app.command("from-hf")
def from_hf(
    config: Path = typer.Argument(..., help="A Hugging Face config.json."),
    topology: str = TOPOLOGY, gpus: Optional[int] = GPUS, nodes: Optional[int] = NODES,
    seq_len: Optional[int] = typer.Option(None, "--seq-len", help="Sequence length (default: the pre-training length)."),
    global_batch: Optional[int] = typer.Option(None, "--global-batch", help="Sequences per step (default: one per DP rank)."),
    micro_batch: int = typer.Option(1, "--micro-batch", help="Sequences per micro-batch."),
    tp: int = typer.Option(1, "--tp"), pp: int = typer.Option(1, "--pp"), cp: int = typer.Option(1, "--cp"),
    ep: int = typer.Option(1, "--ep"), name: Optional[str] = NAME, output: Optional[Path] = OUTPUT,
    as_json: bool = AS_JSON,
) -> None:
    """A scenario from a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2/3, Qwen3-MoE, DeepSeek-V2/V3, GPT-OSS).

    dp is the GPUs over tp*pp*cp. Keys it does not read are named in a warning; an architecture the
    schema cannot express exits with status 2.

    Examples:

      clustersim scenario from-hf config.json --seq-len 4096 --global-batch 64 -o llama.yaml

      clustersim scenario from-hf DeepSeek-V3/config.json --nodes 32 --pp 8 --ep 32 --global-batch 256 -o dsv3.yaml
    """
    from clustersim.importers.hf import scenario_from_hf

    render_imported(scenario_from_hf(config, topology=topology, gpus=gpus, nodes=nodes, seq_len=seq_len,
                                     global_batch=global_batch, micro_batch=micro_batch, tp=tp, pp=pp, cp=cp, ep=ep,
                                     name=name), output, as_json)


@app.command("from-megatron", context_settings={"ignore_unknown_options": True})
def from_megatron(
    args: str = typer.Argument(..., help='Megatron-LM pretrain_gpt.py arguments in one string, or a launch script.'),
    topology: str = TOPOLOGY, gpus: Optional[int] = GPUS, nodes: Optional[int] = NODES,
    name: str = typer.Option("megatron", "--name", help="Scenario name."), output: Optional[Path] = OUTPUT,
    as_json: bool = AS_JSON,
) -> None:
    """A scenario from Megatron-LM arguments (parsed by clustersim; no Megatron install needed).

    Without --gpus/--nodes the cluster is the smallest the layout runs on (dp = 1).

    Examples:

      clustersim scenario from-megatron "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --micro-batch-size 1 --global-batch-size 64 --tensor-model-parallel-size 2 --sequence-parallel --bf16" --gpus 8

      clustersim scenario from-megatron examples/gpt3/train_gpt3_175b_distributed.sh --nodes 128 -o gpt3.yaml
    """
    from clustersim.importers.megatron import scenario_from_megatron

    render_imported(scenario_from_megatron(args, topology=topology, gpus=gpus, nodes=nodes, name=name), output, as_json)


@app.command("from-torchtitan", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def from_torchtitan(
    ctx: typer.Context,
    job: Path = typer.Argument(..., help="A torchtitan job TOML; then --section.key=value overrides."),
    topology: str = TOPOLOGY, gpus: Optional[int] = GPUS, nodes: Optional[int] = NODES,
    name: Optional[str] = NAME, output: Optional[Path] = OUTPUT, as_json: bool = AS_JSON,
) -> None:
    """A scenario from a torchtitan job TOML ([model] name + flavor, [training], [parallelism], ...).

    Examples:

      clustersim scenario from-torchtitan llama3_8b.toml --gpus 8 -o llama3-8b.yaml

      clustersim scenario from-torchtitan llama3_70b.toml --nodes 4 --training.local_batch_size=2
    """
    from clustersim.importers.torchtitan import scenario_from_torchtitan

    render_imported(scenario_from_torchtitan(job, topology=topology, gpus=gpus, nodes=nodes, overrides=ctx.args,
                                             name=name), output, as_json)


@app.command("from-torch")
def from_torch(
    factory: str = typer.Argument(..., help="MODULE:FACTORY, a function (or class) returning an nn.Module."),
    input_shape: str = typer.Option(..., "--input-shape", help="Shape of one micro-batch's input, e.g. 32x3x32x32."),
    input_dtype: str = typer.Option("float32", "--input-dtype", help="float32 | int64 (token ids)."),
    dtype: str = typer.Option("fp32", "--dtype", help="Training dtype of weights and gradients: fp32 | bf16."),
    topology: str = TOPOLOGY, gpus: Optional[int] = GPUS, nodes: Optional[int] = NODES,
    steps: int = typer.Option(10, "--steps", help="Training iterations the job runs."),
    name: Optional[str] = NAME, output: Optional[Path] = OUTPUT, as_json: bool = AS_JSON,
) -> None:
    """A DDP job from any PyTorch model, traced on the meta device (no GPU, no weights allocated).

    Every rank runs the model's forward and backward (FLOPs and bytes from PyTorch's own counters),
    then all-reduces its gradients in DDP's 25 MB buckets, then takes an SGD/AdamW step.

    Examples:

      clustersim scenario from-torch mymodels:make_mlp --input-shape 64x784 --gpus 2 -o mlp.yaml

      clustersim scenario from-torch torchvision.models:resnet18 --input-shape 32x3x224x224 --gpus 8
    """
    from clustersim.importers.torch_trace import scenario_from_torch

    render_imported(scenario_from_torch(factory, input_shape=input_shape, input_dtype=input_dtype, dtype=dtype,
                                        topology=topology, gpus=gpus, nodes=nodes, steps=steps, name=name),
                    output, as_json)
