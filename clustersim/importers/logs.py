"""Step times (and peak memory) read from real training logs, for ``clustersim compare``.

Four formats, found by their own marks (or named with ``fmt``):

* ``megatron``: Megatron-LM's ``iteration N/ M | ... | elapsed time per iteration (ms): T |`` lines, each the
  mean over the iterations since the previous one (``--log-interval``), and its
  ``memory (MB) | allocated: ... | max allocated: X`` report;
* ``torchtitan``: torchtitan's ``step: N  loss: ...  memory: X GiB(...)  tps: T`` lines; ``tps`` is tokens per
  second per GPU, so a step takes ``global_batch x seq_len / (tps x GPUs)`` (the scenario gives them);
  ``memory`` is the caching allocator's peak reserved bytes;
* ``mlperf``: ``:::MLLOG {...}`` events; each ``block_start`` / ``block_stop`` pair with its ``samples_count``
  gives the steps of the block (``samples / global_batch_size``, from the log or the scenario) and their mean;
* ``jsonl``: one JSON object a line with ``step`` and ``step_time_s`` (or ``step_time_ms``), optionally
  ``max_memory_allocated_bytes``.

Each record covers the steps ``(first, last)`` it averages; the records touching one of the first
``warmup`` steps (NCCL's connections, the allocator's growth, compilation) are dropped, and the step
time reported is the median of the rest.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from clustersim.config.input_text import read_input_text
from clustersim.errors import ClusterSimError

FORMATS = ("megatron", "torchtitan", "mlperf", "jsonl")
_MEGATRON = re.compile(r"iteration\s+(\d+)\s*/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*([0-9.]+)")
_MEGATRON_MEM = re.compile(r"max allocated:\s*([0-9.]+)")
_TITAN = re.compile(r"step:\s*(\d+)\s.*?tps:\s*([0-9,]+(?:\.[0-9]+)?)")
_TITAN_MEM = re.compile(r"memory:\s*([0-9.]+)\s*GiB")
GiB, MB = 2**30, 2**20


@dataclass
class Record:
    """One measurement: the steps it covers and their mean step time (``None`` where tps needs the scenario)."""

    first: int
    last: int
    step_s: float | None = None
    tps: float | None = None  # torchtitan: tokens per second per GPU


@dataclass
class Measured:
    """What a log says of its run."""

    fmt: str
    records: list[Record]
    memory_bytes: float | None = None
    memory_kind: str | None = None  # max_allocated | max_reserved
    global_batch: int | None = None  # MLPerf's global_batch_size event
    lines: int = 0
    skipped: list[str] = field(default_factory=list)

    def step_times(self, warmup: int, tokens_per_step: float | None = None, gpus: int | None = None) -> list[float]:
        """Step times of the records after warm-up (torchtitan's tps turned into seconds with the scenario's
        ``tokens_per_step`` on ``gpus``)."""
        out = []
        for r in self.records:
            if r.first <= warmup:
                continue
            if r.step_s is not None:
                out.append(r.step_s)
            elif r.tps and tokens_per_step and gpus:
                out.append(tokens_per_step / (r.tps * gpus))
        return out


def detect(text: str) -> str | None:
    """The format of a log's text, from its marks (None: none found)."""
    if ":::MLLOG" in text:
        return "mlperf"
    if "elapsed time per iteration (ms)" in text:
        return "megatron"
    if _TITAN.search(text):
        return "torchtitan"
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return "jsonl" if first.lstrip().startswith("{") else None


def _megatron(lines: list[str], m: Measured) -> None:
    prev = 0
    for ln in lines:
        hit = _MEGATRON.search(ln)
        if hit:
            it = int(hit.group(1))
            m.records.append(Record(prev + 1, it, float(hit.group(2)) / 1e3))
            prev = it
        mem = _MEGATRON_MEM.search(ln)
        if mem and "memory (MB)" in ln:
            m.memory_bytes, m.memory_kind = max(m.memory_bytes or 0.0, float(mem.group(1)) * MB), "max_allocated"


def _torchtitan(lines: list[str], m: Measured) -> None:
    prev = 0
    for ln in lines:
        hit = _TITAN.search(ln)
        if not hit:
            continue
        step = int(hit.group(1))
        m.records.append(Record(prev + 1, step, tps=float(hit.group(2).replace(",", ""))))
        prev = step
        mem = _TITAN_MEM.search(ln)
        if mem:
            m.memory_bytes, m.memory_kind = max(m.memory_bytes or 0.0, float(mem.group(1)) * GiB), "max_reserved"


def _mlperf(lines: list[str], m: Measured, file: str) -> None:
    start = None
    block = 0
    for n, ln in enumerate(lines, 1):
        if ":::MLLOG" not in ln:
            continue
        try:
            ev = json.loads(ln.split(":::MLLOG", 1)[1])
        except json.JSONDecodeError:
            raise ClusterSimError(f"line {n}: the :::MLLOG event is not valid JSON", file=file) from None
        key, meta = ev.get("key"), ev.get("metadata") or {}
        if key == "global_batch_size":
            m.global_batch = int(ev["value"])
        elif key == "block_start":
            start = (float(ev["time_ms"]), meta.get("samples_count"))
        elif key == "block_stop" and start is not None:
            t0, s0 = start
            s1 = meta.get("samples_count")
            if s0 is None or s1 is None or not m.global_batch:
                m.skipped.append(f"line {n}: block without samples_count or global_batch_size")
                continue
            steps = round((s1 - s0) / m.global_batch)
            if steps > 0:
                first = block + 1
                block += steps
                m.records.append(Record(first, block, (float(ev["time_ms"]) - t0) / 1e3 / steps))
            start = None


def _jsonl(lines: list[str], m: Measured, file: str) -> None:
    for n, ln in enumerate(lines, 1):
        if not ln.strip():
            continue
        try:
            row = json.loads(ln)
        except json.JSONDecodeError:
            raise ClusterSimError(f"line {n}: not a JSON object", file=file) from None
        if not isinstance(row, dict) or "step" not in row:
            raise ClusterSimError(f"line {n}: needs a 'step' and a 'step_time_s' (or 'step_time_ms')", file=file)
        t = row.get("step_time_s", row["step_time_ms"] / 1e3 if "step_time_ms" in row else None)
        if not isinstance(t, (int, float)) or t <= 0:
            raise ClusterSimError(f"line {n}: step_time_s must be a positive number, got {t!r}", file=file)
        m.records.append(Record(int(row["step"]), int(row["step"]), float(t)))
        mem = row.get("max_memory_allocated_bytes")
        if isinstance(mem, (int, float)):
            m.memory_bytes, m.memory_kind = max(m.memory_bytes or 0.0, float(mem)), "max_allocated"


def read_log(path: str | Path, fmt: str | None = None, global_batch: int | None = None) -> Measured:
    """The records of a training log (see the module docstring); ``global_batch``: the sequences per step
    when an MLPerf log has no ``global_batch_size`` event.

    Raises
    ------
    ClusterSimError
        Unreadable file, unknown format, or no step time in it (naming the file).
    """
    # torchtitan colours its log lines (ANSI escapes around the numbers)
    text = re.sub(r"\x1b\[[0-9;]*m", "", read_input_text(path, what="training log"))
    fmt = fmt or detect(text)
    if fmt not in FORMATS:
        raise ClusterSimError(f"no step times of a known format ({', '.join(FORMATS)}) found; name one with --format",
                              file=str(path))
    lines = text.splitlines()
    m = Measured(fmt, [], lines=len(lines), global_batch=global_batch)
    if fmt == "megatron":
        _megatron(lines, m)
    elif fmt == "torchtitan":
        _torchtitan(lines, m)
    elif fmt == "mlperf":
        _mlperf(lines, m, str(path))
    else:
        _jsonl(lines, m, str(path))
    if not m.records:
        raise ClusterSimError(f"no step times found in this {fmt} log", file=str(path))
    return m


def median_step(times: list[float], file: str) -> float:
    """The median of the warm-up-free step times (an error naming the file when warm-up left none)."""
    if not times:
        raise ClusterSimError("every step time lies in the warm-up (use a smaller --warmup)", file=file)
    return statistics.median(times)
