#!/usr/bin/env bash
# Host probe 19 (docs/validation.md 6p): host-bound work on one process, one process under DDP and two processes under
# DDP, alternated over two rounds on one 2-GPU VM, every rank's host speed probe recorded. Writes $OUT/train_steps.jsonl.
#   bash validation/host19-ddp-host_h200x2_2026-11-27/host19_x2.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
for round in 1 2; do
  RUN_TAG=-r$round bash validation/launchers/blind_x2.sh validation/host19-ddp-host_h200x2_2026-11-27/configs.txt m19-single-host m19-ddp2-host > /dev/null
  cat "$OUT/train.log" >> "$OUT/train-all.log"; rm "$OUT/train.log"
  TRAIN_EXTRA="--force-ddp" RUN_TAG=-forceddp-r$round bash validation/launchers/blind_x2.sh validation/host19-ddp-host_h200x2_2026-11-27/configs.txt m19-single-host > /dev/null
  cat "$OUT/train.log" >> "$OUT/train-all.log"; rm "$OUT/train.log"
done
python3 - "$OUT/train_steps.jsonl" <<'PY'
import json, sys, statistics as st
for line in open(sys.argv[1]):
    r = json.loads(line)
    iss = [st.median(x) * 1e3 for x in r["host_issue_s_ranks"]]
    pr = [st.median(s[0] for s in steps) for steps in r["host_probe_ranks"]]
    print(f"{r['run_id']:30s} {1e3 * r['step_time_s']:7.1f} ms  host " + " / ".join(f"{v:.1f}" for v in iss)
          + "  probe " + " / ".join(f"{p:.2f}" for p in pr))
PY
