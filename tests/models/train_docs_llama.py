#!/usr/bin/env python3
"""Trains docs8, a small Llama-family model deeper than stories260K, on this machine's own
documentation, and writes it as a llama2.c checkpoint (the format cutcheck imports).

Eight layers, grouped-query attention (8 query heads over 2 kv heads), an untied head, a
byte-level vocabulary of 256, rotary pairs (2i, 2i + 1) as llama2.c. Trained in f32 on the
CPU with Debian's python3-torch; a few minutes on two cores. The weights are kept beside
this script (docs8.bin) so that the tests need neither torch nor the training run.

    /usr/bin/python3 tests/models/train_docs_llama.py --out tests/models/docs8.bin

The text is every /usr/share/doc/*/copyright file, in sorted path order, up to --text-bytes:
another machine gives other text and other weights, which is as good for the tests (they
need trained weights, not these ones).
"""
import argparse
import glob
import math
import struct
import time

import torch
import torch.nn.functional as F


def corpus(limit):
    out = bytearray()
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        try:
            with open(path, "rb") as f:
                out += f.read()
        except OSError:
            continue
        if len(out) >= limit:
            break
    return bytes(out[:limit])


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    # pairs (2i, 2i + 1), as llama2.c and Meta's checkpoints
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class Layer(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a
        hd = a.dim // a.heads
        self.attention_norm = RMSNorm(a.dim, a.eps)
        self.wq = torch.nn.Linear(a.dim, a.heads * hd, bias=False)
        self.wk = torch.nn.Linear(a.dim, a.kv_heads * hd, bias=False)
        self.wv = torch.nn.Linear(a.dim, a.kv_heads * hd, bias=False)
        self.wo = torch.nn.Linear(a.heads * hd, a.dim, bias=False)
        self.ffn_norm = RMSNorm(a.dim, a.eps)
        self.w1 = torch.nn.Linear(a.dim, a.hidden, bias=False)
        self.w2 = torch.nn.Linear(a.hidden, a.dim, bias=False)
        self.w3 = torch.nn.Linear(a.dim, a.hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        a = self.a
        B, T, _ = x.shape
        hd = a.dim // a.heads
        h = self.attention_norm(x)
        q = self.wq(h).view(B, T, a.heads, hd)
        k = self.wk(h).view(B, T, a.kv_heads, hd)
        v = self.wv(h).view(B, T, a.kv_heads, hd)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        group = a.heads // a.kv_heads
        k = k.repeat_interleave(group, dim=2)  # query head h reads kv head h / group
        v = v.repeat_interleave(group, dim=2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + mask
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, a.dim)
        x = x + self.wo(out)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Model(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a
        self.embedding = torch.nn.Embedding(a.vocab, a.dim)
        self.layers = torch.nn.ModuleList([Layer(a) for _ in range(a.layers)])
        self.norm = RMSNorm(a.dim, a.eps)
        self.output = torch.nn.Linear(a.dim, a.vocab, bias=False)
        hd = a.dim // a.heads
        freq = 1.0 / (a.theta ** (torch.arange(0, hd, 2).float() / hd))
        angle = torch.outer(torch.arange(a.seq_len).float(), freq)
        self.register_buffer("cos", angle.cos()[None, :, None, :], persistent=False)
        self.register_buffer("sin", angle.sin()[None, :, None, :], persistent=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = self.embedding(tokens)
        for layer in self.layers:
            x = layer(x, self.cos[:, :T], self.sin[:, :T], mask)
        return self.output(self.norm(x))


def write_llama2c(model, a, path):
    hd = a.dim // a.heads
    with open(path, "wb") as f:
        # A negative vocabulary size marks an untied head.
        f.write(struct.pack("7i", a.dim, a.hidden, a.layers, a.heads, a.kv_heads, -a.vocab, a.seq_len))

        def put(t):
            f.write(t.detach().to(torch.float32).contiguous().numpy().tobytes())

        put(model.embedding.weight)
        for name in ("attention_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3"):
            for layer in model.layers:
                put(getattr(layer, name).weight)
        put(model.norm.weight)
        freq = 1.0 / (a.theta ** (torch.arange(0, hd, 2).float() / hd))
        angle = torch.outer(torch.arange(a.seq_len).float(), freq)
        put(angle.cos())
        put(angle.sin())
        put(model.output.weight)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs8.bin")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--hidden", type=int, default=352)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--text-bytes", type=int, default=4 << 20)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    a.vocab, a.eps, a.theta = 256, 1e-5, 10000.0
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    data = torch.frombuffer(bytearray(corpus(a.text_bytes)), dtype=torch.uint8).long()
    split = int(len(data) * 0.95)
    train, held = data[:split], data[split:]
    model = Model(a)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01, betas=(0.9, 0.95))
    params = sum(t.numel() for t in model.parameters())
    print(f"{len(data)} bytes of text, {params} parameters")

    def batch(source):
        at = torch.randint(len(source) - a.seq_len - 1, (a.batch,))
        x = torch.stack([source[i:i + a.seq_len] for i in at])
        y = torch.stack([source[i + 1:i + a.seq_len + 1] for i in at])
        return x, y

    start = time.time()
    for step in range(a.steps):
        lr = a.lr * min(1.0, (step + 1) / 50) * 0.5 * (1 + math.cos(math.pi * step / a.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch(train)
        loss = F.cross_entropy(model(x).view(-1, a.vocab), y.view(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == a.steps - 1:
            with torch.no_grad():
                hx, hy = batch(held)
                held_loss = F.cross_entropy(model(hx).view(-1, a.vocab), hy.view(-1)).item()
            print(f"step {step}: loss {loss.item():.3f}, held-out {held_loss:.3f} ({held_loss / math.log(2):.2f} bits "
                  f"a byte), {time.time() - start:.0f} s", flush=True)
    write_llama2c(model, a, a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
