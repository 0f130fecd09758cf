#!/bin/bash
# The GPU benchmarks in one run, each under its own time limit, for a GPU machine held for a few minutes.
#
#   bash bench/gpu_suite.sh OUT_DIR [quick]
#
# Writes each benchmark's JSON and output into OUT_DIR (and OUT_DIR/results.tgz after every step, so
# that whatever finished survives a run stopped at its limit).  Run from the repository root with ssdx
# importable (installed, or the root on PYTHONPATH).  "quick" runs tiny sizes, to check the script on a
# CPU first.  The steps run in order of priority and their limits total about fourteen minutes, more than
# one call may run: a call stopped at its limit loses the last steps, and keeps the JSON of the others.
set -u
O=${1:?usage: bash bench/gpu_suite.sh OUT_DIR [quick]}
Q=${2:-}
PY=${PYTHON:-python3}
mkdir -p "$O"
export PYTHONUNBUFFERED=1
T0=$(date +%s)
step() {  # step NAME LIMIT_S command...
  local name=$1 lim=$2; shift 2
  echo "=== [$(( $(date +%s) - T0 )) s] $name (limit $lim s): $*" | tee -a "$O/log.txt"
  timeout -k 5 "$lim" "$@" > "$O/$name.out" 2>&1
  echo "--- $name exit $? at $(( $(date +%s) - T0 )) s" | tee -a "$O/log.txt"
  tail -c 1500 "$O/$name.out" | tee -a "$O/log.txt"
  (cd "$O" && tar czf results.tgz --exclude=results.tgz -- *)
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee -a "$O/log.txt"
$PY -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1 | tee -a "$O/log.txt"
# sizes: the GPU's, or tiny ones for "quick"; L scales every limit
if [ -z "$Q" ]; then
  N=1000000 S=256 C=1048576 T=100000000 R=2 B=1000000000 BS=32 BC=4194304 L=1
  EC=10000 EC2=100000 ER=10000 SC=100000 FN=1000000 FS=512 TN=1000000 TS=600 GN=4096 GC=4000
else
  N=2000 S=16 C=1024 T=100000 R=1 B=50000 BS=8 BC=16384 L=3
  EC=64 EC2=128 ER=500 SC=500 FN=2000 FS=32 TN=1000 TS=60 GN=16 GC=400
fi
step scale_device $((210 * L)) $PY -m bench.scale_device --json "$O/scale_device.json" --configs $N --steps $S \
  --chunk $C --trivial $T --reps $R --big $B --big-steps $BS --big-chunk $BC
step device_each $((90 * L)) $PY -m bench.scale_device --json "$O/device_each.json" --runs bare,device_each \
  --configs $N --steps $S --chunk $C --reps 3
step engine_1e4 $((110 * L)) $PY -m bench.engine --configs $EC --requests $ER --repeats 3 --json "$O/engine_1e4.json"
step engine_1e5 $((80 * L)) $PY -m bench.engine --configs $EC2 --requests $ER --repeats 3 --json "$O/engine_1e5.json"
step scale_1m $((90 * L)) $PY -m bench.scale --configs $N --chunk $SC --steps $S --devices 1 --reduce 1 --reps $R \
  --json "$O/scale_1m.json"
step fluid $((60 * L)) $PY -m bench.fluid --configs $FN --chunk $C --steps $FS --loop-configs 10 --repeats 3 \
  --json "$O/fluid.json"
step thermal $((60 * L)) $PY -m bench.thermal --configs $TN --steps $TS --loop-configs 10 --step-loop-configs 2 \
  --repeats 3 --baseline-repeats 1 --out "$O/thermal.json"
step gc $((45 * L)) $PY -m bench.gc --configs $GN --cycles $GC --loop-configs 1 --loop-cycles 300 --single-configs 2 \
  --repeats 2 --json "$O/gc.json"
# the batched scan with each of MQSim's mechanisms (read suspension's booking inputs materialised)
step engine_mechanisms $((60 * L)) $PY -m bench.engine_mechanisms --backend jax --configs $EC --requests $ER \
  --repeats 2 --json "$O/engine_mechanisms.json"
# what each reduction adds to the trivial chunk on the device (the part of the chunk's time not yet explained)
step trivial_each $((40 * L)) $PY -m bench.scale_device --json "$O/trivial_each.json" --runs trivial_each \
  --trivial $T --reps $R
echo "=== done at $(( $(date +%s) - T0 )) s" | tee -a "$O/log.txt"
