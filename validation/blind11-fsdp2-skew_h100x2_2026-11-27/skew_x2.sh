#!/usr/bin/env bash
# Blind set 11 and the FSDP2 rank-skew diagnosis on 2 GPUs of one host (issue 14).
#   bash validation/blind11-fsdp2-skew_h100x2_2026-11-27/skew_x2.sh blind   # blind set 9's rows for this GPU (-h100 on H100), OS placement
#   bash validation/blind11-fsdp2-skew_h100x2_2026-11-27/skew_x2.sh cores   # the FSDP2 rows (and rg-ddp2) with every rank on its own physical
#                                            # cores, then the FSDP2 rows again with the OS's placement
#   bash validation/blind11-fsdp2-skew_h100x2_2026-11-27/skew_x2.sh gc      # the FSDP2 rows (and rg-ddp2) with Python's collector off inside
#                                            # steps (train_gpt --gc step), then again with it on (auto)
# Writes $OUT/host.txt (CPU topology, GPU-CPU affinity), $OUT/train_steps.jsonl and $OUT/train.log.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; lscpu; echo; nvidia-smi topo -m; echo; nvidia-smi -q | grep -iE "product name|power limit|max clocks" | head -20; } \
  > "$OUT/host.txt" 2>&1
configs=validation/blind9_h200x2_2026-11-26/configs.txt
fsdp="rg-fsdp2 gv-fsdp2 w7-fsdp2 b2-fsdp2 d7-fsdp2"
case "${1:-blind}" in
  blind) bash validation/launchers/blind_x2.sh $configs ;;
  cores)
    TRAIN_EXTRA="--cpu-affinity cores" RUN_TAG=-cores bash validation/launchers/blind_x2.sh $configs $fsdp rg-ddp2
    RUN_TAG=-again bash validation/launchers/blind_x2.sh $configs $fsdp ;;
  gc)
    TRAIN_EXTRA="--gc step" RUN_TAG=-gcstep bash validation/launchers/blind_x2.sh $configs $fsdp rg-ddp2
    RUN_TAG=-gcauto bash validation/launchers/blind_x2.sh $configs $fsdp ;;
  *) echo "usage: skew_x2.sh blind|cores|gc" >&2; exit 2 ;;
esac
