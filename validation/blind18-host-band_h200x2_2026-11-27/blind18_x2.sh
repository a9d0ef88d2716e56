#!/usr/bin/env bash
# Blind set 18 (issue 14, docs/validation.md 6n): every row of validation/blind18-host-band_h200x2_2026-11-27/configs.txt twice on one 2-GPU VM
# (round 1 then round 2, run ids -r1 / -r2), to check the committed step-time bands against runs whose hosts may run
# at different speeds. Writes $OUT/train_steps.jsonl and train.log.
#   bash validation/blind18-host-band_h200x2_2026-11-27/blind18_x2.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
for round in 1 2; do
  RUN_TAG=-r$round bash validation/launchers/blind_x2.sh validation/blind18-host-band_h200x2_2026-11-27/configs.txt > /dev/null
  cat "$OUT/train.log" >> "$OUT/train-all.log"; rm "$OUT/train.log"
done
python3 - "$OUT/train_steps.jsonl" <<'PY'
import json, sys, statistics as st
for line in open(sys.argv[1]):
    r = json.loads(line)
    pr = [st.median(s[0] for s in steps) for steps in (r.get("host_probe_ranks") or [])]
    print(f"{r['run_id']:28s} {r['status']:6s} {1e3 * (r.get('step_time_s') or 0):8.1f} ms  peak "
          f"{(r.get('peak_memory_bytes') or 0) / 2**30:6.2f} GiB  probe " + " / ".join(f"{p:.2f}" for p in pr))
PY
