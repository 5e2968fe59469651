#!/usr/bin/env python3
"""A GGUF writer outside cutcheck: a llama2.c checkpoint as a GGUF v3 file of the `llama`
architecture with its matrices in Q8_0 or Q4_0, written from the GGUF specification
(ggml's docs/gguf.md) and ggml's block definitions alone (ggml-common.h: block_q8_0 is an
f16 scale and 32 int8; block_q4_0 an f16 scale and 16 bytes, byte j holding value j in its
low nibble and value j + 16 in its high one, value = d * (q - 8)), quantized by the rules of
ggml's quantize_row_q8_0_ref and quantize_row_q4_0_ref in numpy's float32 arithmetic. A
matrix whose rows are not whole 32-value blocks stays F32, as do the norms.

Also writes the same model with every tensor in F32, each quantized matrix as its
dequantized values (f16 scale times code, in float32): the file a correct reader of the
first must import as.

  usage: gguf_quant_writer.py MODEL.bin q8_0|q4_0 OUT.gguf OUT-F32.gguf
"""
import struct
import sys

import numpy as np

ALIGNMENT = 32
F32, Q4_0, Q8_0 = 0, 2, 8  # enum ggml_type
FILE_TYPE = {'q8_0': 7, 'q4_0': 2}  # enum llama_ftype: MOSTLY_Q8_0, MOSTLY_Q4_0


def read_llama2c(path):
    raw = open(path, 'rb').read()
    dim, ffn, layers, heads, kv_heads, vocab, seq = struct.unpack('<7i', raw[:28])
    tied = vocab > 0
    vocab = abs(vocab)
    head_dim = dim // heads
    floats = np.frombuffer(raw[28:], dtype='<f4')
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        out = floats[at:at + n].reshape(shape)
        at += n
        return out

    tensors = {'token_embd.weight': take(vocab, dim)}
    per_layer = {}
    for name, rows, cols in (('attn_norm', 1, dim), ('attn_q', heads * head_dim, dim),
                             ('attn_k', kv_heads * head_dim, dim), ('attn_v', kv_heads * head_dim, dim),
                             ('attn_output', dim, heads * head_dim), ('ffn_norm', 1, dim), ('ffn_gate', ffn, dim),
                             ('ffn_down', dim, ffn), ('ffn_up', ffn, dim)):
        per_layer[name] = take(layers, rows, cols)
    for l in range(layers):
        for name, values in per_layer.items():
            tensors['blk.%d.%s.weight' % (l, name)] = values[l][0] if name.endswith('norm') else values[l]
    tensors['output_norm.weight'] = take(dim)
    at += seq * head_dim  # llama2.c's rotary tables
    if not tied:
        tensors['output.weight'] = take(vocab, dim)
    # llama2.c stores the q and k rows in Meta's pair order, the order GGUF's llama
    # architecture rotates: nothing to permute.
    keys = {'dim': dim, 'ffn': ffn, 'layers': layers, 'heads': heads, 'kv_heads': kv_heads, 'vocab': vocab}
    return keys, tensors


def round_half_away(v):  # C's roundf, on float32 values (exact in float64)
    v = v.astype(np.float64)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def inverse(d):  # 1.0f / d, and 0 where d is 0
    out = np.zeros_like(d)
    np.divide(np.float32(1), d, out=out, where=d != 0)
    return out


def quantize_q8_0(x):
    """Blocks of 32 float32 values -> (bytes, dequantized values)."""
    blocks = x.reshape(-1, 32)
    amax = np.abs(blocks).max(axis=1)
    d = amax / np.float32(127)
    q = round_half_away(blocks * inverse(d)[:, None]).astype(np.int8)
    d16 = d.astype(np.float16)
    data = b''.join(d16[i:i + 1].tobytes() + q[i].tobytes() for i in range(len(blocks)))
    return data, (d16.astype(np.float32)[:, None] * q.astype(np.float32)).reshape(x.shape)


def quantize_q4_0(x):
    blocks = x.reshape(-1, 32)
    first_largest = np.argmax(np.abs(blocks), axis=1)  # the first of equal magnitudes
    d = blocks[np.arange(len(blocks)), first_largest] / np.float32(-8)
    shifted = (blocks * inverse(d)[:, None]) + np.float32(8.5)
    q = np.minimum(15, np.trunc(shifted)).astype(np.uint8)  # C's conversion truncates
    packed = q[:, :16] | (q[:, 16:] << 4)
    d16 = d.astype(np.float16)
    data = b''.join(d16[i:i + 1].tobytes() + packed[i].tobytes() for i in range(len(blocks)))
    values = d16.astype(np.float32)[:, None] * (q.astype(np.float32) - np.float32(8))
    return data, values.reshape(x.shape)


def gguf_string(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


def write_gguf(path, keys, file_type, tensors):
    """tensors: [(name, shape in row-major order, ggml type, bytes)]"""
    kv = [('general.architecture', 8, gguf_string('llama')),
          ('general.file_type', 4, struct.pack('<I', file_type)),
          ('llama.embedding_length', 4, struct.pack('<I', keys['dim'])),
          ('llama.block_count', 4, struct.pack('<I', keys['layers'])),
          ('llama.feed_forward_length', 4, struct.pack('<I', keys['ffn'])),
          ('llama.attention.head_count', 4, struct.pack('<I', keys['heads'])),
          ('llama.attention.head_count_kv', 4, struct.pack('<I', keys['kv_heads'])),
          ('llama.attention.layer_norm_rms_epsilon', 6, struct.pack('<f', 1e-5)),
          ('llama.rope.freq_base', 6, struct.pack('<f', 10000.0)),
          ('llama.vocab_size', 4, struct.pack('<I', keys['vocab']))]
    head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kv))
    for key, kind, value in kv:
        head += gguf_string(key) + struct.pack('<I', kind) + value
    data = b''
    for name, shape, kind, blob in tensors:
        head += gguf_string(name) + struct.pack('<I', len(shape))
        head += b''.join(struct.pack('<Q', n) for n in reversed(shape))  # ne[0], the fastest, first
        head += struct.pack('<IQ', kind, len(data))
        data += blob + b'\0' * (-len(blob) % ALIGNMENT)
    head += b'\0' * (-len(head) % ALIGNMENT)
    open(path, 'wb').write(head + data)


def main():
    model, kind, out, out_f32 = sys.argv[1:5]
    keys, tensors = read_llama2c(model)
    quantize, ggml_type = {'q8_0': (quantize_q8_0, Q8_0), 'q4_0': (quantize_q4_0, Q4_0)}[kind]
    quantized, dequantized = [], []
    for name, values in tensors.items():
        values = np.ascontiguousarray(values, dtype=np.float32)
        if values.ndim == 2 and values.shape[1] % 32 == 0:
            blob, back = quantize(values)
            quantized.append((name, values.shape, ggml_type, blob))
            dequantized.append((name, values.shape, F32, back.astype('<f4').tobytes()))
        else:
            blob = values.astype('<f4').tobytes()
            quantized.append((name, values.shape, F32, blob))
            dequantized.append((name, values.shape, F32, blob))
    write_gguf(out, keys, FILE_TYPE[kind], quantized)
    write_gguf(out_f32, keys, 0, dequantized)


if __name__ == '__main__':
    main()
