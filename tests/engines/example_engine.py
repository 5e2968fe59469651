#!/usr/bin/env python3
"""A minimal engine for cutcheck's engine protocol, cutcheck-engine-1 (docs/engines.md).

    cutcheck conform-engine --engine 'python3 example_engine.py'

It loads cutcheck's own model format (a folder of spec.json and model.safetensors) and runs
the Llama forward pass in plain Python floats, one token at a time with a kv cache: no
numpy, tiny models only. An adapter for a real engine keeps main() and replaces
load_model() and Model.step() with calls into the engine.
"""
import json, math, struct, sys


def read_safetensors(path):
    """{name: flat list of floats} from a safetensors file of F32, F16 or BF16 tensors."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        if info["dtype"] == "F32":
            values = struct.unpack(f"<{len(raw) // 4}f", raw)
        elif info["dtype"] == "F16":
            values = struct.unpack(f"<{len(raw) // 2}e", raw)
        elif info["dtype"] == "BF16":  # the upper half of an f32
            values = struct.unpack(f"<{len(raw) // 2}f", b"".join(b"\0\0" + raw[i:i + 2] for i in range(0, len(raw), 2)))
        else:
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}")
        tensors[name] = list(values)
    return tensors


def matvec(w, x, rows):
    """w is [rows, len(x)] row-major: w @ x."""
    n = len(x)
    return [sum(w[r * n + i] * x[i] for i in range(n)) for r in range(rows)]


def rmsnorm(x, weight, eps):
    scale = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [v * scale * g for v, g in zip(x, weight)]


class Model:
    def __init__(self, folder):
        with open(f"{folder}/spec.json") as f:
            self.spec = json.load(f)
        for knob in ("rope_scaling", "attention_bias", "qk_norm", "sliding_window"):
            if self.spec.get(knob):
                raise NotImplementedError(f"the spec knob {knob}")
        self.w = read_safetensors(f"{folder}/model.safetensors")

    def rope(self, vec, heads, pos):
        """Rotates each head's pairs: (2i, 2i+1) when interleaved, (i, i + E/2) when half."""
        s = self.spec
        E = s["head_dim"]
        out = list(vec)
        for h in range(heads):
            for i in range(E // 2):
                a, b = (h * E + 2 * i, h * E + 2 * i + 1) if s["rope_style"] == "interleaved" else (h * E + i, h * E + i + E // 2)
                angle = pos * s["rope_theta"] ** (-2.0 * i / E)
                c, sn = math.cos(angle), math.sin(angle)
                out[a], out[b] = vec[a] * c - vec[b] * sn, vec[a] * sn + vec[b] * c
        return out

    def step(self, token, pos, cache):
        """Feeds one token at position pos; returns the logits of the next token."""
        s, w = self.spec, self.w
        D, E, H, K, F = s["dim"], s["head_dim"], s["heads"], s["kv_heads"], s["ffn"]
        x = w["tok_embeddings"][token * D:(token + 1) * D]
        for l in range(s["layers"]):
            p = f"layers.{l}."
            h = rmsnorm(x, w[p + "attention_norm"], s["norm_eps"])
            q = self.rope(matvec(w[p + "attention.wq"], h, H * E), H, pos)
            k = self.rope(matvec(w[p + "attention.wk"], h, K * E), K, pos)
            v = matvec(w[p + "attention.wv"], h, K * E)
            cache[l].append((k, v))
            attended = []
            for hh in range(H):
                kv = hh // (H // K)  # grouped-query attention: query heads share a kv head
                qh = q[hh * E:(hh + 1) * E]
                scores = [sum(a * b for a, b in zip(qh, kc[kv * E:(kv + 1) * E])) / math.sqrt(E) for kc, _ in cache[l]]
                m = max(scores)
                e = [math.exp(sc - m) for sc in scores]
                total = sum(e)
                for i in range(E):
                    attended.append(sum(ej * vc[kv * E + i] for ej, (_, vc) in zip(e, cache[l])) / total)
            x = [a + b for a, b in zip(x, matvec(w[p + "attention.wo"], attended, D))]
            h = rmsnorm(x, w[p + "ffn_norm"], s["norm_eps"])
            gate, up = matvec(w[p + "feed_forward.w1"], h, F), matvec(w[p + "feed_forward.w3"], h, F)
            act = [g / (1.0 + math.exp(-g)) * u for g, u in zip(gate, up)]  # SwiGLU
            x = [a + b for a, b in zip(x, matvec(w[p + "feed_forward.w2"], act, D))]
        x = rmsnorm(x, w["norm"], s["norm_eps"])
        return matvec(w["tok_embeddings"] if s["tied"] else w["output"], x, s["vocab"])


def log_softmax(z):
    m = max(z)
    lse = m + math.log(sum(math.exp(v - m) for v in z))
    return [v - lse if v - lse > -math.inf else None for v in z]  # None: -infinity, written null


def answer(model, request):
    """Greedy tokens and the log-probabilities at the requested positions (docs/engines.md)."""
    cache = [[] for _ in range(model.spec["layers"])]
    sequence = list(request["prompt"])
    wanted = set(request["positions"])
    logprobs, tokens = {}, []
    last = max(len(sequence), len(sequence) + request["steps"] - 1)  # the positions there are: 0 .. last - 1
    for pos in range(last):
        logits = model.step(sequence[pos], pos, cache)
        if pos in wanted:
            logprobs[pos] = log_softmax(logits)
        if pos >= len(request["prompt"]) - 1 and len(tokens) < request["steps"]:  # this position generates a token
            tokens.append(max(range(len(logits)), key=lambda t: (logits[t], -t)))
            sequence.append(tokens[-1])
    return {"id": request["id"], "tokens": tokens, "logprobs": [logprobs[p] for p in request["positions"]]}


def main(argv):
    if argv[1:] == ["describe"]:
        print(json.dumps({"format": "cutcheck-engine-1", "name": "example_engine.py 1", "model_formats": ["cutcheck"],
                          "precisions": ["f32"], "max_context": 48,
                          "limits": {"vocab": 64, "dim": 32, "layers": 2, "heads": 4, "head_dim": 8, "ffn": 48}}))
        return 0
    if argv[1:2] != ["run"]:
        print("usage: example_engine.py describe | run --model PATH --format F --precision P --requests R --out O", file=sys.stderr)
        return 2
    args = dict(zip(argv[2::2], argv[3::2]))
    if args["--format"] != "cutcheck" or args["--precision"] != "f32":
        return 77  # not a model this engine runs
    try:
        model = Model(args["--model"])
    except NotImplementedError as e:
        print(f"not supported: {e}", file=sys.stderr)
        return 77
    with open(args["--requests"]) as f:
        requests = json.load(f)
    results = [answer(model, r) for r in requests["requests"]]
    with open(args["--out"], "w") as f:
        json.dump({"format": "cutcheck-engine-1", "results": results}, f, allow_nan=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
