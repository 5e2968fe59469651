#!/usr/bin/env bash
# Quantized GGUF files written outside the project (tests/gguf_quant_writer.py: stories260K
# in Q8_0 and in Q4_0, from the GGUF specification and ggml's block definitions, in numpy):
# import-gguf keeps the blocks (with --widen, exactly the writer's dequantized values: its F32
# file of them imports to the same bits) and generates exactly the tokens of that F32 file;
# cutcheck's own
# export-gguf of the same weights holds the same blocks, byte for byte.
#   usage: cli_quant_gguf.sh CUTCHECK SOURCE_DIR [SHARED]
set -euo pipefail
cutcheck=$1
source_dir=$2
shared=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

if [ -z "$shared" ] || [ ! -f "$shared/models/stories260K.bin" ]; then
  [ -z "${CUTCHECK_REQUIRE_SHARED:-}" ] || { echo "CUTCHECK_REQUIRE_SHARED is set, but stories260K.bin is not there"; exit 1; }
  echo "cli quant gguf: skipped (no ../shared)"
  exit 0
fi
# The writer needs numpy: the first Python that has it.
python=
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import numpy' 2>/dev/null; then python=$candidate; break; fi
done
if [ -z "$python" ]; then
  # CI installs python3-numpy (.ci/packages): there the outside writer must run.
  [ -z "${CUTCHECK_REQUIRE_SHARED:-}" ] || { echo "CUTCHECK_REQUIRE_SHARED is set, but no python3 has numpy"; exit 1; }
  echo "cli quant gguf: skipped (neither python3 nor /usr/bin/python3 has numpy)"
  exit 0
fi
fail() { echo "cli quant gguf: $*"; exit 1; }

# The tensors of two weights folders, bit for bit; or of two GGUF files, their bytes by
# tensor name (the tensors both hold in the same ggml type).
cat >compare.py <<'PY'
import json, struct, sys
def safetensors(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    return {k: (v['dtype'], raw[8 + n + v['data_offsets'][0]: 8 + n + v['data_offsets'][1]]) for k, v in h.items()
            if k != '__metadata__'}
SIZE = {0: (1, 4), 1: (1, 2), 30: (1, 2), 8: (32, 34), 2: (32, 18)}
def gguf(path):
    raw = open(path, 'rb').read()
    at = 4
    def take(fmt):
        nonlocal at
        v = struct.unpack_from(fmt, raw, at)
        at += struct.calcsize(fmt)
        return v
    _, tensors, keys = take('<IQQ')
    def skip_value(kind):
        nonlocal at
        if kind == 8:
            n = take('<Q')[0]
            at += n
            return
        if kind == 9:
            inner, count = take('<IQ')
            for _ in range(count): skip_value(inner)
            return
        at += {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}[kind]
    for _ in range(keys):
        n = take('<Q')[0]
        at += n
        skip_value(take('<I')[0])
    infos = []
    for _ in range(tensors):
        n = take('<Q')[0]
        name = raw[at:at + n].decode()
        at += n
        dims = take('<I')[0]
        shape = take('<%dQ' % dims)
        kind, offset = take('<IQ')
        count = 1
        for d in shape: count *= d
        values, size = SIZE[kind]
        infos.append((name, kind, offset, count // values * size))
    start = (at + 31) // 32 * 32
    return {name: (kind, raw[start + offset: start + offset + size]) for name, kind, offset, size in infos}
mode, a, b = sys.argv[1:4]
read = safetensors if mode == 'weights' else gguf
x, y = read(a), read(b)
if mode == 'weights':
    sys.exit(0 if x == y else 1)
shared = [name for name in x if name in y and x[name][0] == y[name][0] and x[name][0] in (8, 2)]
if not shared: sys.exit(1)
differ = [name for name in shared if x[name][1] != y[name][1]]
print('%d quantized tensors compared, %d differ %s' % (len(shared), len(differ), differ))
sys.exit(1 if differ else 0)
PY

"$cutcheck" import-llama2c "$shared/models/stories260K.bin" --out stories >/dev/null
for kind in q8_0 q4_0; do
  "$python" "$source_dir/tests/gguf_quant_writer.py" "$shared/models/stories260K.bin" "$kind" "outside-$kind.gguf" \
    "outside-$kind-f32.gguf"
  "$cutcheck" import-gguf "outside-$kind.gguf" --out "imported-$kind" >/dev/null
  "$cutcheck" import-gguf "outside-$kind.gguf" --out "widened-$kind" --widen >/dev/null
  "$cutcheck" import-gguf "outside-$kind-f32.gguf" --out "imported-$kind-f32" >/dev/null
  # Kept as blocks: the spec's dtype is the file's, and the weights folder is smaller than
  # the f32 one by about the format's ratio.
  grep -q "\"dtype\": \"$kind\"" "imported-$kind/spec.json" || fail "$kind: the import is not kept in $kind"
  kept=$(stat -c %s "imported-$kind/model.safetensors") wide=$(stat -c %s "imported-$kind-f32/model.safetensors")
  [ $((kept * 2)) -lt "$wide" ] || fail "$kind: the kept weights ($kept bytes) are not blocks (f32: $wide bytes)"
  ! grep -q '"dtype"' "widened-$kind/spec.json" || fail "$kind: --widen is not f32 (the default dtype)"
  python3 compare.py weights "widened-$kind/model.safetensors" "imported-$kind-f32/model.safetensors" ||
    fail "$kind: the import differs from the writer's dequantized values"
  quantized=$("$cutcheck" generate --weights "imported-$kind" --prompt 1 --steps 64)
  dequantized=$("$cutcheck" generate --weights "imported-$kind-f32" --prompt 1 --steps 64)
  [ "$quantized" = "$dequantized" ] || fail "$kind: generation differs from the F32 file's: $quantized vs $dequantized"
  # cutcheck's export of the same weights: the same blocks wherever both chose the same type.
  "$cutcheck" export-gguf --weights stories --out "cutcheck-$kind.gguf" --dtype "$kind" >/dev/null
  python3 compare.py gguf "outside-$kind.gguf" "cutcheck-$kind.gguf" || fail "$kind: cutcheck's blocks differ"
  echo "$kind: $quantized"
done
echo "cli quant gguf: ok"
