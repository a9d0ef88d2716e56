#!/usr/bin/env bash
# Does an FSDP2 rank's host issue time follow its CPU's speed? (issue 14, docs/validation.md 6l/6m/6n.)
# train_gpt.py times three fixed host workloads on every rank just before each timed step (host_probe_ranks: a CPU
# dispatch, a Python call, a CUDA launch; the GPU idle). Three rounds, alternated, of the FSDP2 host probe (h7), two
# FSDP2 rows whose slower rank issued above the probe on some VMs (d7, w7), blind set 17's h 1536 row (274 / 208 ms on
# two VMs) and a GPU-bound DDP row, 16 timed steps each, on one 2-GPU VM. Writes $OUT/train_steps.jsonl, train-all.log, host.txt.
#   bash validation/hostprobe18-host-speed_h200x2_2026-11-27/hostprobe18_x2.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; lscpu; echo; nvidia-smi topo -m; } > "$OUT/host.txt" 2>&1
for round in 1 2 3; do
  export TRAIN_EXTRA="--steps 16" RUN_TAG=-r$round
  bash validation/launchers/blind_x2.sh validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt h7-fsdp2 > /dev/null
  cat "$OUT/train.log" >> "$OUT/train-all.log"; rm "$OUT/train.log"
  bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt d7-fsdp2 w7-fsdp2 rg-ddp2 > /dev/null
  cat "$OUT/train.log" >> "$OUT/train-all.log"; rm "$OUT/train.log"
  bash validation/launchers/blind_x2.sh validation/blind17-fsdp2_h200x2_2026-11-27/configs.txt f17-fsdp2-h1536 > /dev/null
  cat "$OUT/train.log" >> "$OUT/train-all.log"; rm "$OUT/train.log"
done
python3 - "$OUT/train_steps.jsonl" <<'PY'
import json, sys, statistics as st
print(f"{'run':24s} {'step':>6s} | per rank: host issue ms, probe dispatch / python / launch us (medians)")
for line in open(sys.argv[1]):
    r = json.loads(line)
    cells = []
    for k, steps in enumerate(r.get("host_probe_ranks") or []):
        iss = st.median(r["host_issue_s_ranks"][k]) * 1e3
        med = [st.median(s[j] for s in steps) for j in range(3)]
        cells.append(f"{iss:5.0f} {med[0]:5.2f} {med[1]:5.3f} {med[2]:5.2f}")
    print(f"{r['run_id']:24s} {r['step_time_s']*1e3:6.1f} | " + " | ".join(cells))
PY
