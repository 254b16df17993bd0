// onnxruntime's CPU provider on the models of tgc's ONNX benchmarks (npm's
// onnxruntime-node; install with ONNXRUNTIME_NODE_INSTALL=skip npm ci in
// bench/onnx).
//
//   node ort.js bench MODEL.onnx ITERS THREADS NAME=D1,D2,... ...
//        prints {"name", "device": "ort", "seconds"}: the median of ITERS runs
//        after one warm-up, on inputs filled with a fixed pattern
//   node ort.js run MODEL.onnx OUT.npy NAME=FILE.npy ...
//        runs once on float32 .npy inputs and writes the first output as .npy
const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");

function readNpy(file) {
  const b = fs.readFileSync(file);
  const hlen = b.readUInt16LE(8);
  const header = b.toString("latin1", 10, 10 + hlen);
  if (!header.includes("'<f4'") || header.includes("'fortran_order': True")) {
    throw new Error(file + ": only C-ordered float32 .npy files are read");
  }
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(",").map((s) => s.trim()).filter((s) => s).map(Number);
  const data = new Float32Array(b.buffer.slice(b.byteOffset + 10 + hlen, b.byteOffset + b.length));
  return new ort.Tensor("float32", data, shape);
}

function writeNpy(file, t) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${t.dims.join(", ")}${t.dims.length === 1 ? "," : ""}), }`;
  header += " ".repeat((64 - ((10 + header.length + 1) % 64)) % 64) + "\n";
  const pre = Buffer.alloc(10);
  Buffer.from("\x93NUMPY", "latin1").copy(pre);
  pre[6] = 1;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, "latin1"), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)]));
}

async function main() {
  const [mode, model, ...rest] = process.argv.slice(2);
  if (mode === "run") {
    const [out, ...specs] = rest;
    const feeds = {};
    for (const s of specs) {
      const [name, file] = s.split("=");
      feeds[name] = readNpy(file);
    }
    const sess = await ort.InferenceSession.create(model, { intraOpNumThreads: 2, interOpNumThreads: 1 });
    const res = await sess.run(feeds);
    writeNpy(out, res[sess.outputNames[0]]);
    return;
  }
  if (mode !== "bench") throw new Error("usage: node ort.js bench|run ...");
  const [iters, threads, ...specs] = rest;
  const feeds = {};
  for (const s of specs) {
    const [name, dims] = s.split("=");
    const shape = dims.split(",").map(Number);
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = name === "mask" ? 0 : Math.sin(i * 0.37);
    feeds[name] = new ort.Tensor("float32", data, shape);
  }
  const sess = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: "all",
  });
  await sess.run(feeds);
  const times = [];
  for (let i = 0; i < Number(iters); i++) {
    const t0 = process.hrtime.bigint();
    await sess.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ name: path.basename(model, ".onnx"), device: "ort", seconds: times[Math.floor(times.length / 2)] }));
}

main().catch((e) => { console.error(e.message); process.exit(1); });
