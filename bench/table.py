"""Prints the benchmark table from a Google Benchmark JSON file and peak_memory's lines."""
import json
import sys

runs = json.load(open(sys.argv[1]))["benchmarks"]
peaks = [json.loads(line) for line in open(sys.argv[2])]
whole = json.loads(open(sys.argv[3]).read()) if len(sys.argv) > 3 else None
for b in runs:
    if b.get("error_occurred"):
        print(f"WARNING: {b['name']}: {b.get('error_message')}\n")


def is_run_of(b, name):
    """Whether benchmark entry `b` is a run of `name` (fixed-iteration runs add
    /iterations:N, wall-clock ones /real_time, self-timed ones /manual_time)."""
    return b.get("run_name", b["name"]).removesuffix("/real_time").removesuffix("/manual_time").split("/iterations:")[0] == name


def rate(name, counter="tokens/s"):
    """The counter of the benchmark called `name`: the median of its repetitions where it
    was repeated."""
    found = None
    for b in runs:
        if b.get("error_occurred") or b.get("aggregate_name", "median") != "median":
            continue
        if is_run_of(b, name):
            if b.get("run_type") == "aggregate" or found is None:
                found = b.get(counter)
    return found


def best(name, counter):
    """The highest counter among the repetitions of `name`: a read bandwidth, which the
    host's other guests only ever lower (two threads read at anything from 32.6 to 55.8
    GB/s here)."""
    values = [b.get(counter) for b in runs
              if not b.get("error_occurred") and b.get("run_type") != "aggregate" and is_run_of(b, name)]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}g}"


print("Decode, tokens per second (one Decode{ctx} step per token; ctx 64, llama1b 32):\n")
print("| model | plain C loops | reference | reference, 2 threads | oracle | reference / plain |")
print("|---|---|---|---|---|---|")
for model in ("stories260K", "bench512", "llama1b"):
    plain, ref = rate(f"decode/plain/{model}"), rate(f"decode/reference/{model}")
    ref2, oracle = rate(f"decode/reference_2_threads/{model}"), rate(f"decode/oracle/{model}")
    ratio = ref / plain if ref and plain else None
    print(f"| {model} | {fmt(plain)} | {fmt(ref)} | {fmt(ref2)} | {fmt(oracle)} | {fmt(ratio, 2)}x |")

# The bound: every weight read once, the same weights read by two threads right after the
# steps (bench_main.cpp's reference_decode), each decode against its own bound: its median
# step against its median read, the median of the repetitions' ratios (so it can differ a
# little from the quotient of the two medians shown). The read bandwidth of a 1 GiB buffer
# is shown beside it, the machine's speed measured apart.
bw1, bw2 = best("memory/read_bandwidth", "GB/s"), best("memory/read_bandwidth_2_threads", "GB/s")
print(f"\nDecode against reading every weight once (median step, and the same weights read by two threads right "
      f"after the steps; a 1 GiB buffer read at {fmt(bw1)} GB/s by one thread, {fmt(bw2)} GB/s by two; "
      f"llama1b-bf16 is llama1b with its weights stored in bf16):\n")
print("| model | weights | reference, ms | bound, ms (GB/s) | time / bound | reference, 2 threads, ms | bound, ms (GB/s) | time / bound |")
print("|---|---|---|---|---|---|---|---|")
for model in ("bench512", "llama1b", "llama1b-bf16"):
    gb = rate(f"decode/reference/{model}", "weight GB")
    cells = []
    for name in (f"decode/reference/{model}", f"decode/reference_2_threads/{model}"):
        step, bound, ratio = rate(name, "step ms"), rate(name, "bound ms"), rate(name, "time / bound")
        speed = gb / bound * 1e3 if gb and bound else None
        cells += [fmt(step), f"{fmt(bound)} ({fmt(speed)})", f"{fmt(ratio, 2)}x"]
    print(f"| {model} | {fmt(gb)} GB | " + " | ".join(cells) + " |")

# The yardstick (bench/decode_ceiling.h): the same sums over a copy of the weights laid
# out for them, against a read of the same weights right after its passes, as the
# reference's decode is. The two run minutes apart, so they are compared through their
# ratios to their own bounds, not through their times.
print("\nThe ceiling: the same sums on two threads over a copy of the weights laid out for them (panels of 32 "
      "columns, no transposition, one stream per thread, nothing but the multiply-adds), against a bound measured "
      "the same way, right after its passes:\n")
print("| model | ceiling, ms | bound, ms (GB/s) | time / bound | reference, 2 threads, time / bound, over the ceiling's |")
print("|---|---|---|---|---|")
for model in ("bench512", "llama1b", "llama1b-bf16"):
    name = f"decode/ceiling_2_threads/{model}"
    gb, step, bound, ratio = (rate(name, c) for c in ("weight GB", "step ms", "bound ms", "time / bound"))
    ref = rate(f"decode/reference_2_threads/{model}", "time / bound")
    speed = gb / bound * 1e3 if gb and bound else None
    print(f"| {model} | {fmt(step)} | {fmt(bound)} ({fmt(speed)}) | {fmt(ratio, 2)}x | "
          f"{fmt(ref / ratio if ref and ratio else None, 2)}x |")

print("\nContractions of one layer of a 128-row prefill (q, k, v, o, w1, w3, w2), GFLOP/s, against "
      "OpenBLAS dgemm on the same shapes in double:\n")
print("| model | threads | reference | dgemm | reference / dgemm | reference, 2 threads / 1 |")
print("|---|---|---|---|---|---|")
for model in ("bench512", "llama1b"):
    one = rate(f"contract/reference/{model}/threads:1", "GFLOP/s")
    for threads in (1, 2):
        ref = rate(f"contract/reference/{model}/threads:{threads}", "GFLOP/s")
        blas = rate(f"contract/dgemm/{model}/threads:{threads}", "GFLOP/s")
        scale = fmt(ref / one if ref and one else None, 2) + "x" if threads == 2 else ""
        print(f"| {model} | {threads} | {fmt(ref)} | {fmt(blas)} | {fmt(ref / blas if ref and blas else None, 2)}x | {scale} |")

if whole:
    print(f"\n`cutcheck generate` of 256 stories260K tokens as a whole process: {whole['reference_s']:.3f} s; "
          f"the plain C loops (bench/plain_generate.cpp): {whole['plain_s']:.3f} s; speed relative to the plain "
          f"loops {whole['plain_s'] / whole['reference_s']:.2f}x; same tokens: {whole['same_tokens']} (medians of 11 "
          f"alternating runs)")

print("\nPrefill, tokens per second (rows from position 0, ctx = rows):\n")
print("| model | rows | tokens/s | time per row, relative to 16 rows |")
print("|---|---|---|---|")
for model, rows in (("stories260K", (16, 64, 256)), ("bench512", (16, 64))):
    base = rate(f"prefill/reference/{model}/{rows[0]}")
    for r in rows:
        t = rate(f"prefill/reference/{model}/{r}")
        print(f"| {model} | {r} | {fmt(t)} | {fmt(base / t if t and base else None, 2)} |")

print("\nDecode time against ctx (stories260K; linear growth means time / ctx stays flat):\n")
print("| ctx | ms per token | ms per token per 64 positions |")
print("|---|---|---|")
for ctx in (64, 128, 256, 512, 1024):
    t = rate(f"growth/decode_ctx/stories260K/{ctx}")
    if t:
        print(f"| {ctx} | {1000 / t:.3f} | {1000 / t / (ctx / 64):.3f} |")

cases = rate("check/catalog_100_cases", "cases/s")
print(f"\nProperty catalog (`cutcheck check`, 100 cases of each property): {fmt(cases)} cases per second\n")

print("Peak memory of decode (ctx 256), against weights plus kv caches:\n")
print("| model | weights | caches | peak RSS | peak / (weights + caches) | s per token |")
print("|---|---|---|---|---|---|")
for p in peaks:
    print(f"| {p['model']} | {p['weight_bytes'] / 2**20:.1f} MiB | {p['cache_bytes'] / 2**20:.1f} MiB | "
          f"{p['peak_bytes'] / 2**20:.1f} MiB | {p['ratio']:.3f} | {p['seconds_per_token']:.3f} |")
