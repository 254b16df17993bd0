# tgc: two commands on a fresh machine — `make demo` and `make test`.
GO      ?= go
BIN     := bin/tgc
export CGO_ENABLED := 0

.PHONY: build demo test race vet fuzz bench refgen clean

build:
	$(GO) build -o $(BIN) ./cmd/tgc

# Builds tgc and runs the introductory matmul on the default device.
demo: build
	./$(BIN) run models/matmul.tg

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l cmd pkg); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: vet
	$(GO) mod download
	$(GO) test ./...
	$(MAKE) race

# The tests that run scripts, contexts and builds concurrently, under the
# race detector (which needs cgo; tgc itself stays CGO_ENABLED=0). The
# rest of the suite is sequential: -race over all of it takes minutes and
# checks little more.
race:
	CGO_ENABLED=1 $(GO) test -race -run 'Parallel|Context|Concurrent|Steals|RunBatch' ./pkg/tensor ./pkg/script ./pkg/backend

# Short fuzzing runs of the parsers (seeds live in testdata/fuzz).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./pkg/safetensors
	$(GO) test -run '^$$' -fuzz FuzzRun -fuzztime 30s ./pkg/script
	$(GO) test -run '^$$' -fuzz FuzzTranslate -fuzztime 30s ./pkg/script/frontend
	$(GO) test -run '^$$' -fuzz FuzzCheck -fuzztime 30s ./pkg/backend/kcache
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./pkg/gguf
	$(GO) test -run '^$$' -fuzz FuzzDequantize -fuzztime 30s ./pkg/quant
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./pkg/llama2c
	$(GO) test -run '^$$' -fuzz FuzzParseTokenizer -fuzztime 30s ./pkg/llama2c
	$(GO) test -run '^$$' -fuzz '^FuzzEncode$$' -fuzztime 30s ./pkg/tokenizer
	$(GO) test -run '^$$' -fuzz FuzzEncodeBPE -fuzztime 30s ./pkg/tokenizer
	$(GO) test -run '^$$' -fuzz '^FuzzFromGGUF$$' -fuzztime 30s ./pkg/tokenizer
	$(GO) test -run '^$$' -fuzz '^FuzzFromGGUF$$' -fuzztime 30s ./pkg/llama
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./pkg/npy
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./pkg/onnx
	$(GO) test -run '^$$' -fuzz FuzzRun -fuzztime 30s ./pkg/onnx
	$(GO) test -run '^$$' -fuzz FuzzLoadReadBandwidth -fuzztime 30s ./pkg/bench
	$(GO) test -run '^$$' -fuzz FuzzReadImages -fuzztime 30s ./pkg/mnist

# Benchmarks: fused vs unfused elementwise, matmul GFLOP/s.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./pkg/bench

# Regenerates the numpy reference vectors (needs Debian's python3-numpy).
refgen:
	/usr/bin/python3 tools/refgen/gen.py

clean:
	rm -rf bin build

# The reference program of `tgc bench --ref` (Debian: libopenblas-dev).
bench/ref/ref: bench/ref/ref.c
	cc -O3 -march=native -o $@ $< -lopenblas -lpthread
