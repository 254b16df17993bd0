// onnxruntime's CPU provider on the models of tgc's ONNX benchmarks (npm's
// onnxruntime-node; install with ONNXRUNTIME_NODE_INSTALL=skip npm ci in
// bench/onnx).
//
//   node ort.js serve MODEL THREADS NAME=D1,D2,... ...
//        makes the session, runs it once (warm-up) and prints "ready"; then
//        for each line "run" on stdin runs it once on inputs filled with a
//        fixed pattern and prints {"seconds", "cpu_seconds"} (the clock
//        time, and the process's CPU time divided by THREADS): tgc bench
//        --ort alternates these runs with tgc's, so both see the same load
//   node ort.js run MODEL.onnx OUT.npy NAME=FILE.npy ...
//        runs once on float32 .npy inputs and writes the first output as .npy
const fs = require("fs");
const readline = require("readline");
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
  if (mode !== "serve") throw new Error("usage: node ort.js serve|run ...");
  const [threads, ...specs] = rest;
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
  console.log("ready");
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (line.trim() !== "run") break;
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await sess.run(feeds);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    console.log(JSON.stringify({ seconds, cpu_seconds: (c.user + c.system) / 1e6 / Number(threads) }));
  }
}

main().catch((e) => { console.error(e.message); process.exit(1); });
