#!/usr/bin/env bash
# Writes the testdata of tgc's cross-checks against llama.cpp itself:
#   pkg/quant/testdata/ggml/       blocks quantized and dequantized by ggml (TestMatchesGGML)
#   pkg/generate/testdata/llamacpp llama.cpp's logits for pkg/llamatest's random models (TestMatchesLlamaCpp)
# llama.cpp comes from npm, as node-llama-cpp ships it: its prebuilt
# linux-x64 libraries (@node-llama-cpp/linux-x64) and, for llama.h, the
# llama.cpp source bundled in node-llama-cpp. Needs npm, git, gcc, go and
# network access to the npm registry; CI does not run it (the tests read
# what it wrote). Run from the repository root.
set -euo pipefail
version=${NODE_LLAMA_CPP_VERSION:-3.22.1}
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "@node-llama-cpp/linux-x64@$version" "node-llama-cpp@$version" >/dev/null
mkdir bins src
tar xzf node-llama-cpp-linux-x64-"$version".tgz -C bins
tar xzf node-llama-cpp-"$version".tgz -C src
git clone -q src/package/llama/gitRelease.bundle llama.cpp
lib=$work/bins/package/bins/linux-x64
gcc -O1 "$root/scripts/ggml-xcheck.c" -o ggml-xcheck -ldl -lm
gcc -O1 "$root/scripts/llamacpp-logits.c" -I llama.cpp/include -I llama.cpp/ggml/include \
  -L"$lib" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -Wl,-rpath,"$lib" -o llamacpp-logits

(cd "$root/pkg/quant/testdata/ggml" && "$work/ggml-xcheck" "$lib/libggml-base.so" >/dev/null)

mkdir models
(cd "$root" && TGC_WRITE_LLAMACPP_MODELS="$work/models" go test ./pkg/generate -run TestMatchesLlamaCpp -count=1 >/dev/null)
out=$root/pkg/generate/testdata/llamacpp
mkdir -p "$out"
for m in models/*.gguf; do
  name=$(basename "$m" .gguf)
  { echo "sha256 $(sha256sum "$m" | cut -d' ' -f1)"
    GGML_BACKEND_DIR=$lib ./llamacpp-logits "$m" 3 1 17 42 5
  } > "$out/$name.txt"
  echo "$name: $(grep chosen "$out/$name.txt")"
done
