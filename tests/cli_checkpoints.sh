#!/usr/bin/env bash
# import-hf and import-gguf from the command line, on files a Python writer makes from
# stories260K (written from docs/checkpoints.md and the formats' descriptions alone, apart
# from the C++ writers of tests/checkpoint_writers.cpp): the f32 imports generate llama2.c's
# tokens; malformed files exit 2 naming the file and the key or tensor.
#   usage: cli_checkpoints.sh CUTCHECK [SHARED]
set -euo pipefail
cutcheck=$1
shared=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

if [ -z "$shared" ] || [ ! -f "$shared/models/stories260K.bin" ]; then
  [ -z "${CUTCHECK_REQUIRE_SHARED:-}" ] || { echo "CUTCHECK_REQUIRE_SHARED is set, but stories260K.bin is not there"; exit 1; }
  echo "cli checkpoints: skipped (no ../shared)"
  exit 0
fi

python3 - "$shared/models/stories260K.bin" <<'PY'
import json, os, struct, sys
raw = open(sys.argv[1], 'rb').read()
D, F, L, H, K, V, S = struct.unpack('<7i', raw[:28])
tied = V > 0
V = abs(V)
E = D // H
floats = struct.unpack('<%df' % ((len(raw) - 28) // 4), raw[28:])
at = 0
def take(rows, cols=1):
    global at
    out = [list(floats[at + r * cols: at + (r + 1) * cols]) for r in range(rows)]
    at += rows * cols
    return out
emb = take(V, D)
layer = {}
for name, rows, cols in (('attn_norm', 1, D), ('wq', H * E, D), ('wk', K * E, D), ('wv', K * E, D), ('wo', D, H * E),
                         ('ffn_norm', 1, D), ('w1', F, D), ('w2', D, F), ('w3', F, D)):
    layer[name] = [take(rows, cols) for _ in range(L)]
norm = take(1, D)
at += S * E
head = emb if tied else take(V, D)

def hf_rows(w, heads):  # Meta's pairs (2i, 2i+1) to Hugging Face's (i, i + E/2), per head
    out = []
    for h in range(heads):
        block = w[h * E:(h + 1) * E]
        out += block[0::2] + block[1::2]
    return out
def gguf_rows(w, heads):  # llama.cpp's converter: Hugging Face's order back to pairs
    out = []
    for h in range(heads):
        block = w[h * E:(h + 1) * E]
        for i in range(E // 2):
            out += [block[i], block[E // 2 + i]]
    return out

def flat(rows): return [v for r in rows for v in r]
def bf16(v):
    bits = struct.unpack('<I', struct.pack('<f', v))[0]
    return struct.pack('<H', (bits + 0x7fff + ((bits >> 16) & 1)) >> 16)
def encode(values, dtype):
    if dtype == 'F32': return struct.pack('<%df' % len(values), *values)
    if dtype == 'F16': return struct.pack('<%de' % len(values), *values)
    return b''.join(bf16(v) for v in values)

hf = [('model.embed_tokens.weight', emb), ('model.norm.weight', norm[0:1])]
gg = [('token_embd.weight', emb), ('output_norm.weight', norm[0:1])]
for l in range(L):
    p, b = 'model.layers.%d.' % l, 'blk.%d.' % l
    q, k = hf_rows(layer['wq'][l], H), hf_rows(layer['wk'][l], K)
    hf += [(p + 'input_layernorm.weight', layer['attn_norm'][l]), (p + 'self_attn.q_proj.weight', q),
           (p + 'self_attn.k_proj.weight', k), (p + 'self_attn.v_proj.weight', layer['wv'][l]),
           (p + 'self_attn.o_proj.weight', layer['wo'][l]), (p + 'post_attention_layernorm.weight', layer['ffn_norm'][l]),
           (p + 'mlp.gate_proj.weight', layer['w1'][l]), (p + 'mlp.down_proj.weight', layer['w2'][l]),
           (p + 'mlp.up_proj.weight', layer['w3'][l])]
    gg += [(b + 'attn_norm.weight', layer['attn_norm'][l]), (b + 'attn_q.weight', gguf_rows(q, H)),
           (b + 'attn_k.weight', gguf_rows(k, K)), (b + 'attn_v.weight', layer['wv'][l]),
           (b + 'attn_output.weight', layer['wo'][l]), (b + 'ffn_norm.weight', layer['ffn_norm'][l]),
           (b + 'ffn_gate.weight', layer['w1'][l]), (b + 'ffn_down.weight', layer['w2'][l]),
           (b + 'ffn_up.weight', layer['w3'][l])]
if not tied:
    hf.append(('lm_head.weight', head))
    gg.append(('output.weight', head))
def shape(name, rows): return [len(rows[0])] if name.endswith('norm.weight') else [len(rows), len(rows[0])]

config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": D, "intermediate_size": F,
          "num_hidden_layers": L, "num_attention_heads": H, "num_key_value_heads": K, "vocab_size": V,
          "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": tied, "hidden_act": "silu",
          "max_position_embeddings": S, "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2}
for dtype in ('F32', 'BF16'):
    folder = 'hf-' + dtype.lower()
    os.makedirs(folder)
    json.dump(dict(config, torch_dtype={'F32': 'float32', 'BF16': 'bfloat16'}[dtype]), open(folder + '/config.json', 'w'))
    header, data = {}, b''
    for name, rows in hf:
        blob = encode(flat(rows), dtype)
        header[name] = {"dtype": dtype, "shape": shape(name, rows), "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    open(folder + '/model.safetensors', 'wb').write(struct.pack('<Q', len(text)) + text + data)

def s(text): return struct.pack('<Q', len(text)) + text.encode()
for dtype, code in (('F32', 0), ('F16', 1), ('BF16', 30)):
    keys = [('general.architecture', 8, s('llama')), ('llama.context_length', 4, struct.pack('<I', S)),
            ('llama.embedding_length', 4, struct.pack('<I', D)), ('llama.block_count', 4, struct.pack('<I', L)),
            ('llama.feed_forward_length', 4, struct.pack('<I', F)), ('llama.rope.dimension_count', 4, struct.pack('<I', E)),
            ('llama.attention.head_count', 4, struct.pack('<I', H)), ('llama.attention.head_count_kv', 4, struct.pack('<I', K)),
            ('llama.attention.layer_norm_rms_epsilon', 6, struct.pack('<f', 1e-5)),
            ('llama.rope.freq_base', 6, struct.pack('<f', 10000.0))]
    out = b'GGUF' + struct.pack('<IQQ', 3, len(gg), len(keys))
    for key, kind, value in keys: out += s(key) + struct.pack('<I', kind) + value
    data = b''
    for name, rows in gg:
        dims = list(reversed(shape(name, rows)))
        out += s(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
        out += struct.pack('<IQ', code, len(data))
        data += encode(flat(rows), dtype)
        data += b'\0' * (-len(data) % 32)
    out += b'\0' * (-len(out) % 32)
    open('stories260K-%s.gguf' % dtype.lower(), 'wb').write(out + data)
PY

want=$(python3 -c "import json,sys; print(' '.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" \
  "$shared/fixtures/stories260K-greedy.json")
same() {  # how many of the 64 tokens agree with llama2.c's, from the first
  python3 -c "import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); n = 0
while n < min(len(a), len(b)) and a[n] == b[n]: n += 1
print(n)" "$1" "$want"
}
for source in hf-f32 hf-bf16 stories260K-f32.gguf stories260K-f16.gguf stories260K-bf16.gguf; do
  case $source in hf-*) command=import-hf ;; *) command=import-gguf ;; esac
  "$cutcheck" "$command" "$source" --out "imported-$source" >/dev/null
  got=$("$cutcheck" generate --weights "imported-$source" --prompt 1 --steps 64)
  case $source in
    *f32*) [ "$got" = "$want" ] || { echo "$source: got '$got', want '$want'"; exit 1; } ;;
    *) echo "$source: the first $(same "$got") of 64 greedy tokens equal llama2.c's" ;;
  esac
done

expect_refusal() {  # message, then the command: exit 2 and the message on stderr
  local message=$1 out status
  shift
  set +e
  out=$("$cutcheck" "$@" 2>&1)
  status=$?
  set -e
  [ "$status" = 2 ] || { echo "expected exit 2, got $status: $*"; echo "$out"; exit 1; }
  grep -qF -- "$message" <<<"$out" || { echo "expected '$message' from: $*"; echo "$out"; exit 1; }
}
cp -r hf-f32 scaled
python3 -c "import json; c = json.load(open('scaled/config.json')); c['rope_scaling'] = {'rope_type': 'yarn', 'factor': 2.0}
json.dump(c, open('scaled/config.json', 'w'))"
expect_refusal "scaled/config.json: key 'rope_scaling'" import-hf scaled --out x
python3 -c "
import struct
b = bytearray(open('stories260K-f32.gguf', 'rb').read())
i = b.find(b'blk.0.attn_q.weight') + len('blk.0.attn_q.weight')
struct.pack_into('<I', b, i + 4 + 2 * 8, 12)  # the type after the name, the dimension count and two dimensions: Q4_K
open('quantized.gguf', 'wb').write(b)"
expect_refusal "quantized.gguf: tensor 'blk.0.attn_q.weight' is Q4_K" import-gguf quantized.gguf --out x
head -c 1000 stories260K-f16.gguf > truncated.gguf
expect_refusal "truncated.gguf: " import-gguf truncated.gguf --out x
mkfifo fifo.gguf
set +e
out=$(timeout 600 "$cutcheck" import-gguf fifo.gguf --out x 2>&1)  # only ends a read that waits for a writer
status=$?
set -e
[ "$status" = 2 ] && grep -qF "fifo.gguf' is not a regular file" <<<"$out" || { echo "FIFO: exit $status: $out"; exit 1; }
[ ! -e x ] || { echo "a refused import left output behind"; exit 1; }
echo "cli checkpoints: ok"
