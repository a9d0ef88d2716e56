#!/usr/bin/env bash
# DDP's step-2 transient in train_gpt.py itself (docs/validation.md 6q): the allocator's event trace over the first
# three steps of the one-rank DDP probe (held the first bucket set in every run so far), the two-rank DDP run of the
# same work (never) and rg-ddp2 (4 of 18). Writes $OUT/train_steps.jsonl, $OUT/train-all.log and gzipped
# snapshots $OUT/mh-<run>.rank<N>.pickle.gz (at most 8 files come back).
#   bash validation/ddp-step2-transient_h200x2_2026-11-27/memhist_x2.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
run() {  # CONFIGS NAME EXTRA
  TRAIN_EXTRA="$3 --memory-history $OUT/mh-$2$4" RUN_TAG=$4 bash validation/launchers/blind_x2.sh "$1" "$2" > /dev/null
  cat "$OUT/train.log" >> "$OUT/train-all.log"; rm "$OUT/train.log"
}
run validation/host19-ddp-host_h200x2_2026-11-27/configs.txt m19-single-host --force-ddp -forceddp
run validation/host19-ddp-host_h200x2_2026-11-27/configs.txt m19-ddp2-host "" ""
run validation/blind9_h200x2_2026-11-26/configs.txt rg-ddp2 "" ""
for f in "$OUT"/mh-*.pickle; do gzip -9 "$f"; done
ls -la "$OUT" | tee -a "$OUT/train-all.log"
python3 - "$OUT/train_steps.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['run_id']:30s} {r.get('status')} {1e3 * (r.get('step_time_s') or 0):7.1f} ms peaks "
          + " ".join(f"{b / 2**30:.3f}" for b in r.get("peak_memory_bytes_per_step_rank0") or []))
PY
