#!/bin/bash
# The GPU benchmarks in one run, each under its own time limit, for a machine lent for a few minutes.
#
#   bash bench/gpu_suite.sh OUT_DIR [quick]
#
# Writes each benchmark's JSON and output into OUT_DIR (and OUT_DIR/results.tgz after every step, so
# that whatever finished survives a run stopped at its limit).  Run from the repository root with ssdx
# importable (installed, or the root on PYTHONPATH).  "quick" runs tiny sizes, to check the script on a
# CPU first.  The steps run in order of priority and their limits total about twelve minutes, more than
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
if [ -z "$Q" ]; then
  step scale_device 210 $PY -m bench.scale_device --json "$O/scale_device.json" --configs 1000000 --steps 256 \
    --chunk 1048576 --trivial 100000000 --reps 2 --big 1000000000 --big-steps 32 --big-chunk 4194304
  step device_each 90 $PY -m bench.scale_device --json "$O/device_each.json" --runs bare,device_each \
    --configs 1000000 --steps 256 --chunk 1048576 --reps 3
  step engine_1e4 110 $PY -m bench.engine --configs 10000 --requests 10000 --repeats 3 --json "$O/engine_1e4.json"
  step engine_1e5 80 $PY -m bench.engine --configs 100000 --requests 10000 --repeats 3 --json "$O/engine_1e5.json"
  step scale_1m 90 $PY -m bench.scale --configs 1000000 --chunk 100000 --steps 256 --devices 1 --reduce 1 \
    --reps 2 --json "$O/scale_1m.json"
  step fluid 60 $PY -m bench.fluid --configs 1000000 --chunk 1048576 --steps 512 --loop-configs 10 --repeats 3 \
    --json "$O/fluid.json"
  step thermal 60 $PY -m bench.thermal --configs 1000000 --steps 600 --loop-configs 10 --step-loop-configs 2 \
    --repeats 3 --baseline-repeats 1 --out "$O/thermal.json"
  step gc 45 $PY -m bench.gc --configs 4096 --cycles 4000 --loop-configs 1 --loop-cycles 300 --single-configs 2 \
    --repeats 2 --json "$O/gc.json"
else
  step scale_device 300 $PY -m bench.scale_device --json "$O/scale_device.json" --configs 2000 --steps 16 \
    --chunk 1024 --trivial 100000 --reps 1 --big 50000 --big-steps 8 --big-chunk 16384
  step device_each 200 $PY -m bench.scale_device --json "$O/device_each.json" --runs bare,device_each \
    --configs 2000 --steps 16 --chunk 1024 --reps 1
  step engine_1e4 200 $PY -m bench.engine --configs 64 --requests 500 --repeats 1 --json "$O/engine_1e4.json"
  step scale_1m 200 $PY -m bench.scale --configs 2000 --chunk 500 --steps 16 --devices 1 --reduce 1 --reps 1 \
    --json "$O/scale_1m.json"
  step fluid 100 $PY -m bench.fluid --configs 2000 --chunk 1024 --steps 32 --loop-configs 2 --repeats 1 \
    --json "$O/fluid.json"
  step thermal 100 $PY -m bench.thermal --configs 1000 --steps 60 --loop-configs 2 --step-loop-configs 1 \
    --repeats 1 --baseline-repeats 1 --out "$O/thermal.json"
  step gc 100 $PY -m bench.gc --configs 16 --cycles 400 --loop-configs 1 --loop-cycles 100 --single-configs 1 \
    --repeats 1 --json "$O/gc.json"
fi
echo "=== done at $(( $(date +%s) - T0 )) s" | tee -a "$O/log.txt"
