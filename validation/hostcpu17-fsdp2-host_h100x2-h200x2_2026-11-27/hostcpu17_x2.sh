#!/usr/bin/env bash
# FSDP2 host diagnosis on 2 GPUs of one host (issue 14, docs/validation.md 6g/2e): what the late rank's host does.
# Every rank records, over each timed step's issue, its main thread's and its process's CPU seconds and context
# switches (train_gpt.py host_cpu_ranks); a sampler writes every CPU's busy share and clock each second (cpu.jsonl).
# Rows: the host-bound sweep row and probe (control), four GPU-heavier FSDP2 rows and rg-ddp2 (OS placement), then
# d7 and w7 with each rank on its own physical cores. Writes $OUT/host.txt, cpu.jsonl, train_steps.jsonl, train.log.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; lscpu; echo; nvidia-smi topo -m; echo; nvidia-smi -q | grep -iE "product name|power limit" | head -6; } \
  > "$OUT/host.txt" 2>&1
python3 - "$OUT/cpu.jsonl" <<'PY' &
import json, sys, time
def stat():
    out = {}
    for line in open("/proc/stat"):
        if line.startswith("cpu") and line[3].isdigit():
            f = line.split(); v = list(map(int, f[1:9]))
            out[int(f[0][3:])] = (sum(v) - v[3] - v[4], sum(v), v[7])  # busy (steal included), all, steal
    return out
def mhz():
    m, cpu = {}, None
    for line in open("/proc/cpuinfo"):
        if line.startswith("processor"): cpu = int(line.split(":")[1])
        elif line.startswith("cpu MHz"): m[cpu] = float(line.split(":")[1])
    return m
prev = stat()
with open(sys.argv[1], "w") as f:
    for _ in range(900):
        time.sleep(1.0)
        cur, m = stat(), mhz()
        busy = {c: round((cur[c][0] - prev[c][0]) / max(cur[c][1] - prev[c][1], 1), 3) for c in cur}
        steal = {c: round((cur[c][2] - prev[c][2]) / max(cur[c][1] - prev[c][1], 1), 3) for c in cur}
        f.write(json.dumps({"t": time.time(), "busy": busy, "steal": steal,
                            "mhz": {c: round(v) for c, v in m.items()}}) + "\n"); f.flush()
        prev = cur
PY
sampler=$!
if [ "${QUICK:-0}" = 1 ]; then  # the probe and d7 only, with the sampler
  bash validation/launchers/blind_x2.sh validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt h7-fsdp2
  bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt d7-fsdp2 w7-fsdp2
  kill $sampler 2>/dev/null; exit 0
fi
bash validation/launchers/blind_x2.sh validation/fsdp16-host-width_h200x2_2026-11-27/configs.txt hs-fsdp2-h2048
mv "$OUT/train.log" "$OUT/train-a.log"
bash validation/launchers/blind_x2.sh validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt h7-fsdp2
mv "$OUT/train.log" "$OUT/train-b.log"
bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt d7-fsdp2 w7-fsdp2 gv-fsdp2 rg-fsdp2 rg-ddp2
mv "$OUT/train.log" "$OUT/train-c.log"
TRAIN_EXTRA="--cpu-affinity cores" RUN_TAG=-cores bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt d7-fsdp2 w7-fsdp2
kill $sampler 2>/dev/null
python3 - "$OUT/train_steps.jsonl" <<'PY'
import json, sys, statistics as st
print(f"{'run':24s} {'step':>6s} | per rank: host issue, main CPU, process CPU (ms), vol/invol switches of main")
for line in open(sys.argv[1]):
    r = json.loads(line)
    cells = []
    for k, steps in enumerate(r.get("host_cpu_ranks") or []):
        iss = st.median(r["host_issue_s_ranks"][k]) * 1e3
        med = [st.median(s[j] for s in steps) for j in range(5)]
        cells.append(f"{iss:5.0f} {med[0]*1e3:5.0f} {med[1]*1e3:5.0f} {med[2]:4.0f}/{med[3]:3.0f}")
    print(f"{r['run_id']:24s} {r['step_time_s']*1e3:6.1f} | " + " | ".join(cells))
PY
