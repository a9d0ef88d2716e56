#!/usr/bin/env bash
# Round 4 of the drift probe: every channel's start and stop (GPU globaltimer) of every collective call, through
# NCCL's profiler plugin (validation/probes/collective-startup-drift/chprof/chprof.c, built here with gcc). all_gather at NCCL's 24 channels
# and at 8, all_reduce and broadcast at 24; 16 MiB - 1 GiB. Writes $OUT/chprof/*.txt (one line per channel of a
# call: seq func count nChannels algo proto channel start_ns stop_ns), $OUT/chprof.jsonl (bench-style times),
# $OUT/probe4.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT/chprof"
lib=$PWD/build-chprof/libnccl-profiler-chprof.so
mkdir -p build-chprof
gcc -O2 -Wall -shared -fPIC -o "$lib" validation/probes/collective-startup-drift/chprof/chprof.c -lpthread 2>&1 | tee "$OUT/probe4.log"
run() {  # TAG OPS ENV...
  tag=$1; ops=$2; shift 2
  mkdir -p "$OUT/chprof/$tag"
  env NCCL_PROFILER_PLUGIN="$lib" CHPROF_DIR="$OUT/chprof/$tag" NCCL_DEBUG=WARN "$@" timeout -k 5 150 \
    python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-startup-drift/coll_drift.py \
    --sweep 16,64,256,1024 --ops "$ops" --tag "$tag" >> "$OUT/chprof.jsonl" 2>> "$OUT/probe4.log"
  echo "chprof $tag rc=$? files $(ls "$OUT/chprof/$tag" | wc -l) lines $(cat "$OUT/chprof/$tag"/* 2>/dev/null | wc -l)" \
    | tee -a "$OUT/probe4.log"
}
run ch24 all_gather,all_reduce,broadcast X=1
run ch8 all_gather NCCL_MIN_NCHANNELS=8 NCCL_MAX_NCHANNELS=8
head -3 "$OUT"/chprof/ch24/* | cut -c1-150
grep "MiB:" "$OUT/probe4.log"
# keep what comes back small: one file per tag
for t in ch24 ch8; do cat "$OUT/chprof/$t"/* | gzip > "$OUT/chprof-$t.txt.gz"; done
rm -rf "$OUT/chprof"
