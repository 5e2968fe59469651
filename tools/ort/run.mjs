// Runs an ONNX export of a cutcheck program (cutcheck export-onnx; docs/onnx.md) on ONNX
// Runtime's CPU execution provider, through onnxruntime-node:
//   node run.mjs --plan PLAN.json --inputs IN.safetensors --outputs OUT.safetensors [--optimize on|off]
// The plan lists each chip's segments (one ONNX model each) and the collectives between
// them; this program feeds the segments, carries out each all_reduce / all_gather the way
// the reference does (reference/chips.cpp), and writes the unsplit outputs. It reads and
// writes safetensors itself. Exit 0 with OUT written, 2 on any error (with a message).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

class Failure extends Error {}

function parseArgs(argv) {
  const args = { optimize: 'on' };
  for (let i = 0; i < argv.length; ++i) {
    const key = argv[i];
    const value = argv[i + 1];
    if (!['--plan', '--inputs', '--outputs', '--optimize'].includes(key) || value === undefined)
      throw new Failure(`usage: run.mjs --plan PLAN --inputs IN --outputs OUT [--optimize on|off] (at '${key}')`);
    args[key.slice(2)] = value;
    ++i;
  }
  for (const k of ['plan', 'inputs', 'outputs'])
    if (!args[k]) throw new Failure(`--${k} is required`);
  if (!['on', 'off'].includes(args.optimize)) throw new Failure(`--optimize '${args.optimize}': choose on or off`);
  return args;
}

// safetensors: an 8-byte little-endian header length, a JSON header, then the bytes.
const ARRAYS = { F32: Float32Array, I32: Int32Array };
const DTYPE_OF = { f32: 'F32', i32: 'I32' };
const ORT_TYPE = { F32: 'float32', I32: 'int32' };

function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  const where = (what) => `${file}: ${what}`;
  if (buf.length < 8) throw new Failure(where('shorter than the 8-byte header length'));
  const headerLength = Number(buf.readBigUInt64LE(0));
  if (8 + headerLength > buf.length) throw new Failure(where(`header of ${headerLength} bytes runs past the end`));
  let header;
  try {
    header = JSON.parse(buf.subarray(8, 8 + headerLength).toString('utf8'));
  } catch (e) {
    throw new Failure(where(`header is not JSON: ${e.message}`));
  }
  const base = 8 + headerLength;
  const tensors = new Map();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const Array_ = ARRAYS[entry.dtype];
    if (!Array_) throw new Failure(where(`tensor '${name}' has dtype ${entry.dtype}; expected F32 or I32`));
    const [begin, end] = entry.data_offsets;
    const count = entry.shape.reduce((a, b) => a * b, 1);
    if (end - begin !== count * 4 || base + end > buf.length)
      throw new Failure(where(`tensor '${name}' has offsets [${begin}, ${end}] that do not fit its shape or the file`));
    const bytes = buf.subarray(base + begin, base + end);
    const data = new Array_(count);  // a copy, so the data is aligned
    new Uint8Array(data.buffer).set(bytes);
    tensors.set(name, { dtype: entry.dtype, shape: entry.shape, data });
  }
  return tensors;
}

function writeSafetensors(file, tensors) {
  const names = [...tensors.keys()].sort();
  const header = {};
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let text = JSON.stringify(header);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(text)));
  const parts = [length, Buffer.from(text, 'utf8')];
  for (const name of names) {
    const d = tensors.get(name).data;
    parts.push(Buffer.from(d.buffer, d.byteOffset, d.byteLength));
  }
  const tmp = `${file}.tmp.${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat(parts));
  fs.renameSync(tmp, file);
}

const sameShape = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const count = (shape) => shape.reduce((a, b) => a * b, 1);

// A kv cache that chip c of n holds a slice of: dimension rank-2 (the kv heads) cut in n
// equal blocks (model/sharding's shard_cache).
function shardCache(t, n, c) {
  const s = t.shape, r = s.length;
  const heads = s[r - 2] / n, inner = s[r - 1], outer = count(s.slice(0, r - 2));
  const data = new t.data.constructor(outer * heads * inner);
  for (let o = 0; o < outer; ++o)
    data.set(t.data.subarray((o * s[r - 2] + c * heads) * inner, (o * s[r - 2] + (c + 1) * heads) * inner), o * heads * inner);
  const shape = s.slice();
  shape[r - 2] = heads;
  return { dtype: t.dtype, shape, data };
}

function gatherCache(parts) {
  const s = parts[0].shape, r = s.length, n = parts.length;
  const heads = s[r - 2], inner = s[r - 1], outer = count(s.slice(0, r - 2));
  const data = new parts[0].data.constructor(outer * heads * inner * n);
  for (let o = 0; o < outer; ++o)
    for (let c = 0; c < n; ++c)
      data.set(parts[c].data.subarray(o * heads * inner, (o + 1) * heads * inner), (o * n + c) * heads * inner);
  const shape = s.slice();
  shape[r - 2] = heads * n;
  return { dtype: parts[0].dtype, shape, data };
}

// Per-chip inputs from the unsplit ones (harness/split.cpp's shard_inputs).
function shardInputs(plan, unsplit) {
  const n = plan.chips.length;
  return plan.chips.map((chip, c) => {
    const env = new Map();
    for (const decl of chip.inputs) {
      const t = unsplit.get(decl.name);
      if (!t) throw new Failure(`input '${decl.name}' was not given`);
      if (t.dtype !== DTYPE_OF[decl.dtype])
        throw new Failure(`input '${decl.name}' is ${t.dtype}; the program takes ${decl.dtype}`);
      if (sameShape(t.shape, decl.shape)) {
        env.set('%' + decl.name, t);
        continue;
      }
      const r = t.shape.length;
      const sliced = t.shape.slice();
      if (r >= 2 && sliced[r - 2] % n === 0) sliced[r - 2] /= n;
      if (r < 2 || !sameShape(sliced, decl.shape))
        throw new Failure(`input '${decl.name}' has shape [${t.shape}]; chip ${c} of ${n} takes [${decl.shape}]`);
      env.set('%' + decl.name, shardCache(t, n, c));
    }
    return env;
  });
}

// The reference's collectives: a sum accumulated in double in the group's order and
// rounded once (i32 wraps); a gather concatenating in the group's order.
function allReduce(parts, dtype) {
  const n = parts[0].data.length;
  if (dtype === 'F32') {
    const acc = new Float64Array(n);
    for (const p of parts) for (let i = 0; i < n; ++i) acc[i] += p.data[i];
    return Float32Array.from(acc);
  }
  const acc = new Int32Array(n);
  for (const p of parts) for (let i = 0; i < n; ++i) acc[i] = (acc[i] + p.data[i]) | 0;
  return acc;
}

function allGather(parts, dim) {
  const s = parts[0].shape;
  const outer = count(s.slice(0, dim)), run = count(s.slice(dim));
  const data = new parts[0].data.constructor(outer * run * parts.length);
  for (let o = 0; o < outer; ++o)
    for (let g = 0; g < parts.length; ++g) data.set(parts[g].data.subarray(o * run, (o + 1) * run), (o * parts.length + g) * run);
  const shape = s.slice();
  shape[dim] *= parts.length;
  return { dtype: parts[0].dtype, shape, data };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const planText = fs.readFileSync(args.plan, 'utf8');
  const plan = JSON.parse(planText);
  if (plan.format !== 'cutcheck-onnx-1') throw new Failure(`${args.plan}: format '${plan.format}', expected cutcheck-onnx-1`);
  const dir = path.dirname(args.plan);
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    const here = path.dirname(fileURLToPath(import.meta.url));
    throw new Failure(`onnxruntime-node is not installed beside ${here}/run.mjs (run: npm ci --ignore-scripts --prefix ${here}): ${e.message}`);
  }
  const options = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: args.optimize === 'on' ? 'all' : 'disabled',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  };

  const unsplit = readSafetensors(args.inputs);
  const envs = shardInputs(plan, unsplit);
  const steps = plan.chips[0].steps.length;
  for (const chip of plan.chips)
    if (chip.steps.length !== steps) throw new Failure(`${args.plan}: the chips have different numbers of steps`);
  for (let s = 0; s < steps; ++s) {
    const first = plan.chips[0].steps[s];
    if (first.collective) {
      for (const group of first.groups) {
        const parts = group.map((c) => {
          const t = envs[c].get(plan.chips[c].steps[s].operand);
          if (!t) throw new Failure(`chip ${c} has no value ${plan.chips[c].steps[s].operand} for its ${first.collective}`);
          return t;
        });
        for (const c of group) {
          const step = plan.chips[c].steps[s];
          if (step.collective !== first.collective) throw new Failure(`step ${s}: the chips' collectives do not match`);
          const result =
            first.collective === 'all_reduce'
              ? { dtype: parts[0].dtype, shape: parts[0].shape, data: allReduce(parts, parts[0].dtype) }
              : allGather(parts, step.dim);
          envs[c].set(step.result, result);
        }
      }
      continue;
    }
    for (let c = 0; c < plan.chips.length; ++c) {
      const step = plan.chips[c].steps[s];
      if (step.model === null) continue;
      const session = await ort.InferenceSession.create(path.join(dir, step.model), options);
      const feeds = {};
      for (const name of step.inputs) {
        const t = envs[c].get(name);
        if (!t) throw new Failure(`chip ${c}, ${step.model}: no value ${name}`);
        feeds[name] = new ort.Tensor(ORT_TYPE[t.dtype], t.data, t.shape);
      }
      const results = await session.run(feeds);
      for (const name of step.outputs) {
        const r = results[name];
        const dtype = r.type === 'float32' ? 'F32' : r.type === 'int32' ? 'I32' : null;
        if (!dtype) throw new Failure(`${step.model}: output ${name} came back as ${r.type}`);
        envs[c].set(name, { dtype, shape: r.dims.map(Number), data: r.data });
      }
      await session.release();
    }
  }

  // The unsplit outputs: caches the chips hold slices of are gathered, the rest come from
  // chip 0 and must agree across chips (harness/split.cpp's gather_outputs).
  const out = new Map();
  for (const decl of plan.chips[0].outputs) {
    const parts = plan.chips.map((chip, c) => {
      const o = chip.outputs.find((x) => x.name === decl.name);
      const t = o && envs[c].get(o.value);
      if (!t) throw new Failure(`chip ${c} computed no output '${decl.name}'`);
      return t;
    });
    const given = unsplit.get(decl.name);
    if (plan.chips.length > 1 && given && !sameShape(given.shape, parts[0].shape)) {
      out.set(decl.name, gatherCache(parts));
      continue;
    }
    out.set(decl.name, parts[0]);
  }
  writeSafetensors(args.outputs, out);
}

main().catch((e) => {
  process.stderr.write(`cutcheck-ort: error: ${e instanceof Failure ? e.message : e.stack || e}\n`);
  process.exit(2);
});
