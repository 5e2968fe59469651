// cutcheck-llamacpp: cutcheck's engine adapter for llama.cpp (docs/engines.md, protocol
// cutcheck-engine-1; docs/llamacpp.md), through node-llama-cpp's prebuilt CPU binary.
//   node run.mjs [OPTIONS] describe
//   node run.mjs [OPTIONS] run --model M.gguf --format gguf --precision P --requests REQ --out OUT
// OPTIONS (before the verb, so that they belong to the engine command conform-engine is
// given): --fault late|scale (planted faults), --kv-cache f32|f16|bf16 (the KV cache's type
// instead of the precision's), --threads N (instead of 1).
// It hands llama.cpp token ids only: the GGUF's vocabulary is synthetic (cutcheck
// export-gguf), and no text is ever tokenized. Exit 0 with the answer written, 77 for a
// model it does not run, 2 on any other error (with a message on stderr).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const FORMAT = 'cutcheck-engine-1';
const VERSION = '3.21.1';  // node-llama-cpp, pinned in package.json
// One thread: llama.cpp's results then do not depend on the machine's core count, and a
// campaign on a shared CI machine takes one core (docs/llamacpp.md has the measurements).
const DEFAULT_THREADS = 1;
// The KV cache's element type per precision: f32 keeps keys and values as computed;
// f16 and bf16 store them as llama.cpp does by default for such models. Quantized models
// (q8_0, q4_0, q4_k_m: cutcheck hands a GGUF file llama-quantize's recipe would write)
// keep the cache in f32, so that what is held is the weights' and their activations' rounding.
const KV_CACHE_TYPE = { f32: 'F32', f16: 'F16', bf16: 'BF16', q8_0: 'F32', q4_0: 'F32', q4_k_m: 'F32' };
// Planted faults, for showing that conform-engine catches and shrinks a wrong engine:
// `late` evaluates every prompt one position late (its first token twice), as an engine
// that forgets to drop a BOS token it added would; `scale` loads a quantized model whose
// quantized tensors have each block scaled by the next block's scale (the last keeps its
// own), as a dot-product kernel that indexes the scales one block off would.
const FAULTS = ['late', 'scale'];

class Failure extends Error {
  constructor(message, code = 2) {
    super(message);
    this.code = code;
  }
}

function parseArgs(argv) {
  const args = { fault: null, kvCache: null, threads: DEFAULT_THREADS };
  let i = 0;
  for (; i < argv.length && argv[i].startsWith('--'); i += 2) {
    const [option, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Failure(`${option} needs a value`);
    if (option === '--fault') {
      if (!FAULTS.includes(value)) throw new Failure(`--fault '${value}': choose one of ${FAULTS.join(', ')}`);
      args.fault = value;
    } else if (option === '--kv-cache') {
      if (!(value in KV_CACHE_TYPE)) throw new Failure(`--kv-cache '${value}': choose f32, f16 or bf16`);
      args.kvCache = KV_CACHE_TYPE[value];
    } else if (option === '--threads') {
      if (!/^[1-9][0-9]{0,2}$/.test(value)) throw new Failure(`--threads '${value}': a thread count from 1 to 999`);
      args.threads = Number(value);
    } else {
      throw new Failure(`unknown option '${option}' before the verb`);
    }
  }
  args.verb = argv[i++];
  if (args.verb === 'describe') {
    if (i !== argv.length) throw new Failure(`describe takes no arguments (got '${argv[i]}')`);
    return args;
  }
  if (args.verb !== 'run') throw new Failure(`usage: cutcheck-llamacpp [--fault late|scale] [--kv-cache T] [--threads N] describe | run --model M --format gguf --precision P --requests REQ --out OUT`);
  const keys = ['--model', '--format', '--precision', '--requests', '--out'];
  for (; i < argv.length; i += 2) {
    if (!keys.includes(argv[i]) || argv[i + 1] === undefined) throw new Failure(`run: unknown option or missing value at '${argv[i]}'`);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of keys) if (args[k.slice(2)] === undefined) throw new Failure(`run: ${k} is required`);
  return args;
}

function describe(args) {
  const notes = [`${args.threads} thread${args.threads > 1 ? 's' : ''}`];
  if (args.kvCache) notes.push(`KV cache ${args.kvCache}`);
  if (args.fault) notes.push(`fault ${args.fault}`);
  return {
    format: FORMAT,
    name: `llama.cpp via node-llama-cpp ${VERSION} (CPU, ${notes.join(', ')})`,
    model_formats: ['gguf'],
    precisions: Object.keys(KV_CACHE_TYPE),
    max_context: 512,
    logprobs: 'full',
  };
}

// The requests document, checked as far as this adapter relies on it.
function readRequests(file) {
  let doc;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Failure(`${file}: ${e.message}`);
  }
  const where = (what) => `${file}: ${what}`;
  if (doc.format !== FORMAT) throw new Failure(where(`format is ${JSON.stringify(doc.format)}, not "${FORMAT}"`));
  if (!Number.isInteger(doc.vocab) || doc.vocab < 1) throw new Failure(where('vocab must be a positive integer'));
  if (doc.top_k !== undefined && doc.top_k !== 0) throw new Failure(where(`top_k is ${doc.top_k}; this engine reports the full vocabulary (0)`));
  if (!Array.isArray(doc.requests)) throw new Failure(where('requests must be an array'));
  doc.requests.forEach((r, k) => {
    const at = (what) => where(`requests[${k}].${what}`);
    if (!Array.isArray(r.prompt) || r.prompt.length === 0 || !r.prompt.every((t) => Number.isInteger(t) && t >= 0 && t < doc.vocab))
      throw new Failure(at('prompt must be a non-empty array of token ids below the vocabulary'));
    if (!Number.isInteger(r.steps) || r.steps < 0) throw new Failure(at('steps must be an integer >= 0'));
    const last = Math.max(r.prompt.length, r.prompt.length + r.steps - 1);  // docs/engines.md: positions below max(n, n + steps - 1)
    if (!Array.isArray(r.positions) || !r.positions.every((p, j) => Number.isInteger(p) && p >= 0 && p < last && (j === 0 || p > r.positions[j - 1])))
      throw new Failure(at(`positions must increase, each in [0, ${last})`));
  });
  return doc;
}

// Where each quantized type keeps a block's f16 scale, and its block size in bytes (ggml's
// block_q4_0, block_q5_0, block_q8_0, block_q4_K, block_q6_K; ggml_type ids).
const BLOCK_SCALE = {
  2: { values: 32, bytes: 18, at: 0 }, 6: { values: 32, bytes: 22, at: 0 }, 8: { values: 32, bytes: 34, at: 0 },
  12: { values: 256, bytes: 144, at: 0 }, 14: { values: 256, bytes: 210, at: 208 },
};

// The GGUF file `bytes` with each block of every quantized tensor given the next block's scale.
function neighbourScale(bytes) {
  try {
    return withNeighbourScales(bytes);
  } catch (e) {
    if (e instanceof RangeError) throw new Failure(`--fault scale: the model file ends inside its header or a tensor (${e.message})`);
    throw e;
  }
}

function withNeighbourScales(bytes) {
  let at = 0;
  const u32 = () => { const v = bytes.readUInt32LE(at); at += 4; return v; };
  const u64 = () => { const v = Number(bytes.readBigUInt64LE(at)); at += 8; return v; };
  const str = () => { const n = u64(); const v = bytes.toString('utf8', at, at + n); at += n; return v; };
  const SIZES = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skip = (type) => {
    if (type === 8) str();
    else if (type === 9) { const inner = u32(); const n = u64(); for (let i = 0; i < n; ++i) skip(inner); }
    else if (type in SIZES) at += SIZES[type];
    else throw new Failure(`--fault scale: metadata value type ${type} unknown`);
  };
  if (bytes.toString('latin1', 0, 4) !== 'GGUF') throw new Failure('--fault scale: the model is no GGUF file');
  at = 8;
  const tensors = u64(), keys = u64();
  let alignment = 32;
  for (let k = 0; k < keys; ++k) {
    const key = str(), type = u32();
    if (key === 'general.alignment' && type === 4) alignment = bytes.readUInt32LE(at);
    skip(type);
  }
  const targets = [];
  for (let t = 0; t < tensors; ++t) {
    const tname = str(), dims = u32();
    let count = 1;
    for (let d = 0; d < dims; ++d) count *= u64();
    const type = u32(), offset = u64();
    if (type in BLOCK_SCALE) targets.push({ type, offset, count });
  }
  if (targets.length === 0) throw new Failure('--fault scale: the model has no quantized tensor', 77);
  const data = Math.ceil(at / alignment) * alignment;
  const out = Buffer.from(bytes);
  for (const target of targets) {
    const { values, bytes: size, at: scale } = BLOCK_SCALE[target.type];
    const first = data + target.offset + scale;
    for (let b = 0; b + 1 < target.count / values; ++b) out.writeUInt16LE(bytes.readUInt16LE(first + (b + 1) * size), first + b * size);
  }
  return out;
}

// The arg-max of a probability map (the lowest token on an exact tie).
function greedy(probabilities) {
  let best = -1, bestP = -1;
  for (const [token, p] of probabilities) if (p > bestP || (p === bestP && token < best)) [best, bestP] = [token, p];
  return best;
}

// Natural-log probabilities of tokens 0..vocab-1; null where the probability is 0.
function logprobs(probabilities, vocab) {
  if (probabilities.size !== vocab) throw new Failure(`llama.cpp returned ${probabilities.size} probabilities, the vocabulary has ${vocab}`);
  const out = new Array(vocab).fill(null);
  for (const [token, p] of probabilities) out[token] = p > 0 ? Math.log(p) : null;
  return out;
}

// One request from an empty cache: the prompt in one batch, reporting the distributions
// asked for (and the last one, for the first greedy step), then the greedy steps.
async function answer(sequence, request, vocab, fault) {
  await sequence.clearHistory();
  const n = request.prompt.length;
  const wanted = new Set(request.positions);
  const fed = fault === 'late' ? [request.prompt[0], ...request.prompt] : request.prompt;
  const shift = fed.length - n;
  const items = fed.map((token, i) => {
    const p = i - shift;  // the position this evaluation is reported as
    const ask = p >= 0 && (wanted.has(p) || (p === n - 1 && request.steps > 0));
    return ask ? [token, { generateNext: { probabilities: true } }] : token;
  });
  const results = await sequence.controlledEvaluate(items);
  const distributions = new Map();  // position -> probability map
  results.forEach((r, i) => { if (r?.next?.probabilities) distributions.set(i - shift, r.next.probabilities); });
  const tokens = [];
  for (let k = 0; k < request.steps; ++k) {
    const token = greedy(distributions.get(n - 1 + k));
    tokens.push(token);
    if (k + 1 < request.steps) {
      const [r] = await sequence.controlledEvaluate([[token, { generateNext: { probabilities: true } }]]);
      distributions.set(n + k, r.next.probabilities);
    }
  }
  return { id: request.id, tokens, logprobs: request.positions.map((p) => logprobs(distributions.get(p), vocab)) };
}

async function run(args) {
  if (args.format !== 'gguf') throw new Failure(`--format '${args.format}': this engine loads gguf only`, 77);
  if (!(args.precision in KV_CACHE_TYPE)) throw new Failure(`--precision '${args.precision}': choose ${Object.keys(KV_CACHE_TYPE).join(', ')}`, 77);
  const doc = readRequests(args.requests);
  if (!fs.statSync(args.model, { throwIfNoEntry: false })?.isFile()) throw new Failure(`--model '${args.model}' is not a file`);
  const { getLlama, LlamaLogLevel, LlamaModel } = await import('node-llama-cpp');
  // node-llama-cpp checks at load that text survives tokenizing and detokenizing; on a
  // synthetic vocabulary without byte tokens llama.cpp's tokenizer aborts the process
  // there. Token ids are all this adapter gives, so text tokenizing is refused instead
  // (a JavaScript error, which that check catches).
  LlamaModel.prototype.tokenize = () => { throw new Error('cutcheck-llamacpp evaluates token ids only'); };
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  let modelPath = args.model, faulted = null;
  let model;
  try {
    if (args.fault === 'scale') {  // a copy of the model with the fault in it; the model's own file is an input
      const bytes = neighbourScale(fs.readFileSync(args.model));
      faulted = fs.mkdtempSync(path.join(os.tmpdir(), 'cutcheck-llamacpp-'));
      modelPath = path.join(faulted, 'model.gguf');
      fs.writeFileSync(modelPath, bytes);
    }
    model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  } finally {
    if (faulted) fs.rmSync(faulted, { recursive: true, force: true });
  }
  const longest = Math.max(2, ...doc.requests.map((r) => r.prompt.length + r.steps + 1));
  const context = await model.createContext({
    contextSize: longest,
    batchSize: longest,
    threads: args.threads,
    flashAttention: false,
    experimentalKvCacheKeyType: args.kvCache ?? KV_CACHE_TYPE[args.precision],
    experimentalKvCacheValueType: args.kvCache ?? KV_CACHE_TYPE[args.precision],
  });
  const sequence = context.getSequence();
  const results = [];
  for (const request of doc.requests) results.push(await answer(sequence, request, doc.vocab, args.fault));
  await context.dispose();
  await model.dispose();
  await llama.dispose();
  const out = JSON.stringify({ format: FORMAT, results });
  const temp = path.join(path.dirname(args.out), `.${path.basename(args.out)}.tmp.${process.pid}`);
  fs.writeFileSync(temp, out);
  fs.renameSync(temp, args.out);
}

async function main() {
  try {
    const args = parseArgs(process.argv.slice(2));
    if (args.verb === 'describe') {
      process.stdout.write(JSON.stringify(describe(args)) + '\n');
      return 0;
    }
    await run(args);
    return 0;
  } catch (e) {
    process.stderr.write(`cutcheck-llamacpp: ${e instanceof Failure ? '' : 'error: '}${e.message}\n`);
    return e instanceof Failure ? e.code : 2;
  }
}

process.exitCode = await main();
