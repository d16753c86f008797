#!/bin/bash
# The device half of gpu/bench/pack_device.sh: unpack the libraries, record
# the device, run the GPU suite, then `replay --backend gpu --backend-check
# 20 --shadow` on a multi-turn workload with preemptions forced and on the
# first 150 requests of the packed Mooncake slice (its measured steps also as
# calibration samples). Raw outputs in $OUT (the device tool returns at most
# 8 files: 7 here).
D=$PWD/.dev
mkdir -p $D/lib && tar -xJf $D/libs.tar.xz -C $D/lib
export LD_LIBRARY_PATH=$D/lib:$D/bin:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
B=$D/bin
LOG=$OUT/run.log
exec > >(tee -a $LOG) 2>&1
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $OUT/smi.txt
cat $OUT/smi.txt
ldd $B/prefixsim | grep "not found"
echo "== GPU suite"
SECONDS=0
timeout 150 $B/test_gpu_kernels --durations yes > $OUT/test_gpu.log 2>&1; echo "test rc=$? ${SECONDS}s"
tail -4 $OUT/test_gpu.log
echo "== multi-turn, preemptions, gpu backend check"
SECONDS=0
timeout 90 $B/prefixsim replay --workload multi-turn --requests 50 --kv-blocks 120 --gpu h200-141gb \
  --backend gpu --backend-check 20 --shadow --out /tmp/mt --quiet; echo "mt rc=$? ${SECONDS}s"
cp /tmp/mt/report.json $OUT/mt_report.json
echo "== mooncake conversation slice, first 150 requests"
SECONDS=0
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $OUT/smi.txt
timeout 330 $B/prefixsim replay $D/mc200.jsonl --requests 150 --gpu h200-141gb --kv-tokens 300000 \
  --backend gpu --backend-check 20 --shadow --shadow-samples /tmp/mc_samples.csv --out /tmp/mc --quiet
echo "mc rc=$? ${SECONDS}s"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $OUT/smi.txt
cp /tmp/mc/report.json $OUT/mc_report.json
cp /tmp/mc/report.html $OUT/mc_report.html
# The replay's own steps as calibration samples (gpu calibrate / gpu validate here, afterwards).
cp /tmp/mc_samples.csv $OUT/mc_samples.csv
date -u
