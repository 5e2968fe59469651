#!/usr/bin/env bash
# Writes the seed corpora under fuzz/corpus from a built cutcheck. The corpora are
# committed; run this again after a change to the formats.
#   usage: fuzz/make_corpus.sh build/release/cutcheck
set -euo pipefail
cutcheck=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
out=$here/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out" && mkdir -p "$out"/{program_text,json,safetensors,cut,llama2c,hf,gguf,cut_params,replay,quant}
cd "$work"

# A small spec keeps the programs short.
cat > small.json <<'JSON'
{"name": "small", "vocab": 8, "dim": 4, "layers": 1, "heads": 2, "kv_heads": 1, "head_dim": 2, "ffn": 4,
 "norm_eps": 1e-05, "rope_theta": 10000.0, "rope_style": "half", "tied": false}
JSON
"$cutcheck" weights --spec small.json --seed 1 --dir w --tp 1 >/dev/null
i=0
for cut in decode_embed decode_head 'decode_layer{layer=0,ctx=2}' 'batch_layer{layer=0,rows=2,ctx=2}' \
           'prefill{rows=2,ctx=3}' forward 'batch_head{rows=2}'; do
  "$cutcheck" author --spec small.json --cut "$cut" --dir w --out "p$i" >/dev/null
  cp "p$i/program.txt" "$out/program_text/cut$i.txt"
  "$cutcheck" inputs "p$i" --seed "$i" --out "$out/safetensors/inputs$i.safetensors" >/dev/null
  { printf '\001'; cat "p$i/manifest.json"; } > "$out/json/manifest$i"
  i=$((i + 1))
done
cat > small2.json <<'JSON'
{"name": "split", "vocab": 8, "dim": 4, "layers": 1, "heads": 2, "kv_heads": 2, "head_dim": 2, "ffn": 4,
 "norm_eps": 1e-05, "rope_theta": 10000.0, "rope_style": "interleaved", "tied": true}
JSON
"$cutcheck" author --spec small2.json --cut 'decode_layer{layer=0,ctx=2}' --dir w --out split --tp 2 >/dev/null
cp split/chip1/program.txt "$out/program_text/chip1.txt"
cat > "$out/program_text/every_op.txt" <<'TXT'
program "every op"
input %a : f32[2,3]
input %i : i32[2] range [0, 1]
weight %w : f32[3,3]
%c = constant {value = -inf} : f32[2,3]
%t = iota {iota_dimension = 1} : i32[2,3]
%f = convert %t : f32[2,3]
%s = add %a, %f : f32[2,3]
%d = divide %s, %a : f32[2,3]
%p = power %d, %d : f32[2,3]
%e = exponential %p : f32[2,3]
%l = logistic %e : f32[2,3]
%m = compare %l, %c {comparison_direction = GT} : i1[2,3]
%x = select %m, %l, %c : f32[2,3]
%b = broadcast_in_dim %x {broadcast_dimensions = [1, 2]} : f32[4,2,3]
%r = reshape %b : f32[8,3]
%q = transpose %r {permutation = [1, 0]} : f32[3,8]
%z = slice %q {start_indices = [0, 1], limit_indices = [3, 8], strides = [1, 3]} : f32[3,3]
%k = concatenate %z, %z {dimension = 0} : f32[6,3]
%zero = constant {value = 0} : i32[]
%u = dynamic_update_slice %k, %z, %zero, %zero : f32[6,3]
%g = gather %u, %i : f32[2,3]
%v = reduce %g {kind = max, dimensions = [1]} : f32[2]
%y = dot_general %g, %w {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]} : f32[2,3]
output y = %y
output v = %v
TXT
cp w/model.safetensors "$out/safetensors/weights.safetensors"
{ printf '\000'; cat small.json; } > "$out/json/spec"
{ printf '\000'; "$cutcheck" spec tiny; } > "$out/json/spec_tiny"
# Weights of types of their own, as an import of a Q4_K_M file writes them.
cat > "$out/json/spec_mixed" <<'JSON'
{"name": "k", "vocab": 64, "dim": 256, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 64, "ffn": 512, "norm_eps": 1e-05, "rope_theta": 10000.0, "rope_style": "interleaved", "tied": false, "dtype": "q4_K", "weight_dtypes": {"layers.1.attention.wv": "q6_K", "layers.0.feed_forward.w2": "f16", "output": "q6_K", "norm": "bf16"}}
JSON
printf '\000' | cat - "$out/json/spec_mixed" > "$out/json/spec_mixed2" && mv "$out/json/spec_mixed2" "$out/json/spec_mixed"
cat > "$out/json/case" <<'JSON'
{"spec": {"name": "small", "vocab": 8, "dim": 4, "layers": 1, "heads": 2, "kv_heads": 1, "head_dim": 2, "ffn": 4, "norm_eps": 1e-05, "rope_theta": 10000.0, "rope_style": "half", "tied": false}, "cut": "batch{rows=2,ctx=3}", "tokens": [1, 2], "positions": [0, 2], "weight_seed": 3, "data_seed": 4, "tp": 1, "k_scale": 1.0}
JSON
printf '\002' | cat - "$out/json/case" > "$out/json/case2" && mv "$out/json/case2" "$out/json/case"
# fuzz_replay: the same case.json (first byte even), and reproduce strings (odd).
cp "$out/json/case" "$out/replay/case"
printf '\001reproduce=' > "$out/replay/reproduce_empty"
printf '\001seed=1 max_success=10 reproduce=' > "$out/replay/config"

i=0
for cut in 'decode{ctx=16}' 'prefill{rows=4,ctx=16}' 'batch{rows=4,ctx=32}' forward 'forward_layer{layer=1}' \
           forward_head decode_embed 'decode_layer{layer=2,ctx=8}' decode_head 'batch_embed{rows=4}' \
           'batch_layer{layer=2,rows=4,ctx=32}' 'batch_head{rows=3}' 'prefill_layer{layer=1,rows=3,ctx=8}' \
           'prefill_head{rows=3}' ' BatchLayer { ctx = 4, layer=0,rows=1 }'; do
  printf '%s' "$cut" > "$out/cut/cut$i"
  i=$((i + 1))
done

# Two tiny llama2.c checkpoints, tied and untied: header, then floats (the sizes follow run.c).
python3 - "$out/llama2c" <<'PY'
import struct, sys, random
random.seed(1)
dim, hidden, layers, heads, kv, vocab, seq = 4, 8, 1, 2, 1, 8, 4
hs = dim // heads
def floats(n): return struct.pack('<%df' % n, *[random.uniform(-1, 1) for _ in range(n)])
for name, v in (('tied.bin', vocab), ('untied.bin', -vocab)):
    body = floats(vocab * dim) + floats(layers * dim) + floats(layers * dim * heads * hs) + \
        floats(2 * layers * dim * kv * hs) + floats(layers * heads * hs * dim) + floats(layers * dim) + \
        floats(3 * layers * dim * hidden) + floats(dim) + floats(seq * hs)
    if v < 0: body += floats(vocab * dim)
    open(sys.argv[1] + '/' + name, 'wb').write(struct.pack('<7i', dim, hidden, layers, heads, kv, v, seq) + body)
PY
# Hugging Face seeds for fuzz_hf (first byte 0: config.json; 1: safetensors for the small
# config fuzz_hf.cpp holds), and GGUF files of the same model in F32, F16 and BF16; both
# written here from the formats' descriptions alone.
python3 - "$out" <<'PY'
import json, random, struct, sys
out = sys.argv[1]
random.seed(3)
V, D, L, H, K, E, F = 8, 4, 1, 2, 1, 2, 4
config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": D,
          "intermediate_size": F, "num_hidden_layers": L, "num_attention_heads": H,
          "num_key_value_heads": K, "head_dim": E, "vocab_size": V, "rms_norm_eps": 1e-05,
          "rope_theta": 10000.0, "tie_word_embeddings": False}
open(out + '/hf/config', 'wb').write(b'\0' + json.dumps(config).encode())
hf = [("model.embed_tokens.weight", [V, D]), ("model.norm.weight", [D]), ("lm_head.weight", [V, D])]
gguf = [("token_embd.weight", [V, D]), ("output_norm.weight", [D]), ("output.weight", [V, D])]
for l in range(L):
    for hf_name, gguf_name, shape in (("input_layernorm", "attn_norm", [D]), ("self_attn.q_proj", "attn_q", [H * E, D]),
                                      ("self_attn.k_proj", "attn_k", [K * E, D]), ("self_attn.v_proj", "attn_v", [K * E, D]),
                                      ("self_attn.o_proj", "attn_output", [D, H * E]), ("post_attention_layernorm", "ffn_norm", [D]),
                                      ("mlp.gate_proj", "ffn_gate", [F, D]), ("mlp.up_proj", "ffn_up", [F, D]),
                                      ("mlp.down_proj", "ffn_down", [D, F])):
        hf.append(("model.layers.%d.%s.weight" % (l, hf_name), shape))
        gguf.append(("blk.%d.%s.weight" % (l, gguf_name), shape))
def count(shape):
    n = 1
    for d in shape: n *= d
    return n
def values(shape): return [random.uniform(-1, 1) for _ in range(count(shape))]
def encode(vals, dtype):
    if dtype == 'F32': return struct.pack('<%df' % len(vals), *vals)
    if dtype == 'F16': return struct.pack('<%de' % len(vals), *vals)
    return b''.join(struct.pack('<I', struct.unpack('<I', struct.pack('<f', v))[0])[2:] for v in vals)  # BF16, truncated
for dtype in ('F32', 'BF16'):
    header, data = {}, b''
    for name, shape in hf:
        blob = encode(values(shape), dtype)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    text += b' ' * (-len(text) % 8)
    open(out + '/hf/model-%s' % dtype.lower(), 'wb').write(b'\1' + struct.pack('<Q', len(text)) + text + data)
def s(text): return struct.pack('<Q', len(text)) + text.encode()
for dtype, code in (('F32', 0), ('F16', 1), ('BF16', 30)):
    keys = [("general.architecture", 8, s("llama")), ("llama.embedding_length", 4, struct.pack('<I', D)),
            ("llama.block_count", 4, struct.pack('<I', L)), ("llama.feed_forward_length", 4, struct.pack('<I', F)),
            ("llama.attention.head_count", 4, struct.pack('<I', H)), ("llama.attention.head_count_kv", 4, struct.pack('<I', K)),
            ("llama.attention.layer_norm_rms_epsilon", 6, struct.pack('<f', 1e-5)),
            ("llama.rope.freq_base", 6, struct.pack('<f', 10000.0)),
            ("tokenizer.ggml.tokens", 9, struct.pack('<IQ', 8, V) + b''.join(s("t%d" % i) for i in range(V)))]
    head = b'GGUF' + struct.pack('<IQQ', 3, len(gguf), len(keys))
    for key, kind, value in keys: head += s(key) + struct.pack('<I', kind) + value
    data = b''
    for name, shape in gguf:
        head += s(name) + struct.pack('<I', len(shape)) + b''.join(struct.pack('<Q', d) for d in reversed(shape))
        head += struct.pack('<IQ', code, len(data))
        data += encode(values(shape), dtype)
        data += b'\0' * (-len(data) % 32)
    head += b'\0' * (-len(head) % 32)
    open(out + '/gguf/small-%s.gguf' % dtype.lower(), 'wb').write(head + data)
PY
# Quantized GGUF seeds for fuzz_gguf: a model whose matrices mix Q8_0 and Q4_0 (rows of 32)
# with ffn_down (rows of 256) in Q4_K or in Q6_K, blocks of random codes and small f16
# scales, laid out as ggml-common.h's block structs.
python3 - "$out/gguf" <<'PY'
import random, struct, sys
out = sys.argv[1]
random.seed(4)
V, D, F, H, K, E = 8, 32, 256, 2, 1, 16
def rand(n): return bytes(random.randrange(256) for _ in range(n))
def f16(): return struct.pack('<e', random.uniform(-0.05, 0.05))
blocks = {8: (32, lambda: f16() + rand(32)), 2: (32, lambda: f16() + rand(16)),
          12: (256, lambda: f16() + f16() + rand(140)), 14: (256, lambda: rand(208) + f16())}
def tensor(shape, kind):
    if kind == 0: return struct.pack('<%df' % shape[-1], *[random.uniform(0.5, 1.5) for _ in range(shape[-1])])
    values, block = blocks[kind]
    rows = shape[0] if len(shape) == 2 else 1
    return b''.join(block() for _ in range(rows * shape[-1] // values))
def s(text): return struct.pack('<Q', len(text)) + text.encode()
for name, ffn_down in (('q8_0-q4_0-q4_k', 12), ('q8_0-q4_0-q6_k', 14)):
    gguf = [("token_embd.weight", [V, D], 8), ("blk.0.attn_norm.weight", [D], 0), ("blk.0.attn_q.weight", [H * E, D], 2),
            ("blk.0.attn_k.weight", [K * E, D], 8), ("blk.0.attn_v.weight", [K * E, D], 2),
            ("blk.0.attn_output.weight", [D, H * E], 8), ("blk.0.ffn_norm.weight", [D], 0),
            ("blk.0.ffn_gate.weight", [F, D], 2), ("blk.0.ffn_down.weight", [D, F], ffn_down),
            ("blk.0.ffn_up.weight", [F, D], 8), ("output_norm.weight", [D], 0), ("output.weight", [V, D], 8)]
    keys = [("general.architecture", 8, s("llama")), ("llama.embedding_length", 4, struct.pack('<I', D)),
            ("llama.block_count", 4, struct.pack('<I', 1)), ("llama.feed_forward_length", 4, struct.pack('<I', F)),
            ("llama.attention.head_count", 4, struct.pack('<I', H)), ("llama.attention.head_count_kv", 4, struct.pack('<I', K)),
            ("llama.attention.layer_norm_rms_epsilon", 6, struct.pack('<f', 1e-5))]
    head = b'GGUF' + struct.pack('<IQQ', 3, len(gguf), len(keys))
    for key, kind, value in keys: head += s(key) + struct.pack('<I', kind) + value
    data = b''
    for tname, shape, kind in gguf:
        head += s(tname) + struct.pack('<I', len(shape)) + b''.join(struct.pack('<Q', d) for d in reversed(shape))
        head += struct.pack('<IQ', kind, len(data))
        data += tensor(shape, kind)
        data += b'\0' * (-len(data) % 32)
    head += b'\0' * (-len(head) % 32)
    open(out + '/small-%s.gguf' % name, 'wb').write(head + data)
PY
python3 -c "
import random, sys
random.seed(2)
for i in range(12): open(sys.argv[1] + '/bytes%d' % i, 'wb').write(bytes(random.randrange(256) for _ in range(48)))
" "$out/cut_params"
# fuzz_quant: a format byte (0 q8_0, 1 q4_0, 2 q4_K, 3 q6_K, 4 i8_row; plus 5 to quantize the
# payload as f32 values), rows and cols (little-endian int64), then two rows of blocks with
# random codes and a scale of 1 (f16 0x3c00, f32 0x3f800000), or random values.
python3 - "$out/quant" <<'PY'
import random, struct, sys
out = sys.argv[1]
random.seed(5)
def rand(n): return bytes(random.randrange(256) for _ in range(n))
one = struct.pack('<e', 1.0)
blocks = {0: (32, lambda: one + rand(32)), 1: (32, lambda: one + rand(16)), 2: (256, lambda: one + one + rand(140)),
          3: (256, lambda: rand(208) + one), 4: (48, lambda: struct.pack('<f', 1.0) + rand(48))}
for code, (values, block) in blocks.items():
    head = struct.pack('<Bqq', code, 2, values * 2)
    row = block() + block() if code != 4 else block()
    open('%s/blocks%d' % (out, code), 'wb').write(head + row + row)
    floats = struct.pack('<%df' % (values * 4), *[random.gauss(0, 1) for _ in range(values * 4)])
    open('%s/values%d' % (out, code), 'wb').write(struct.pack('<Bqq', code + 5, 2, values * 2) + floats)
# An infinite scale, a row that is not whole blocks, a size that overflows.
open(out + '/inf_scale', 'wb').write(struct.pack('<Bqq', 0, 1, 32) + b'\x00\x7c' + rand(32))
open(out + '/partial', 'wb').write(struct.pack('<Bqq', 2, 1, 100) + rand(144))
open(out + '/overflow', 'wb').write(struct.pack('<Bqq', 3, 1 << 40, 1 << 30) + rand(210))
PY
echo "corpus written to $out"
