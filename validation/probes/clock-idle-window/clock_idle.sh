#!/usr/bin/env bash
# The clock's time constant under idle gaps (validation/probes/clock-idle-window/clock_idle.py) on one GPU, with the SM clock and
# power sampled every 20 ms. Writes $OUT/clock_idle.jsonl, $OUT/clocks.csv, $OUT/host.txt.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
{ date -u; nvidia-smi -q | grep -iE "product name|power limit|max clocks" | head -8; } > "$OUT/host.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 20 > "$OUT/clocks.csv" & mon=$!
PYTHONUNBUFFERED=1 timeout -k 5 240 python3 validation/probes/clock-idle-window/clock_idle.py > "$OUT/clock_idle.jsonl"
echo "clock_idle rc=$?"
kill $mon
python3 - "$OUT/clock_idle.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["phase"] == "settle":
        t = r["ms"]; print("settle", [round(sum(t[i:i+100]) / 100, 3) for i in range(0, len(t), 250)])
    elif r["phase"] == "resume":
        t = r["ms"]; print("resume gap", r["gap_ms"], "first", [round(x, 3) for x in t[:5]], "10-20", round(sum(t[10:20]) / 10, 3), "80-100", round(sum(t[80:]) / 20, 3))
    else:
        print(r)
PY
