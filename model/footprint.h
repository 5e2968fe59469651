// The memory policy for whole runs: before any weight, cache or activation is allocated,
// the total a run will need is estimated from the spec and the cut and checked against
// the memory limit (core/limits). The per-tensor check in core/tensor stays as the last
// line of defence; this is the check that names the number that is too big.
#pragma once

#include <string>

#include "model/cut.h"
#include "model/spec.h"

namespace cutcheck {

// Bytes of all of the model's weights in the spec's dtype, as the seeded generator and
// every loader hold them. Computed in double so that no spec can overflow the estimate.
double weight_bytes(const ModelSpec& spec);

// The estimate for one run of `cut`: all weights in their dtype (every command holds the
// whole model; a weights file is mapped, and a run reads every page of it), the kv caches
// twice (the input and the updated output), and the activations of the widest step
// (rows x (3 ffn + 2 vocab + heads x ctx + 8 dim) f32 values, which bounds the attention
// scores, the SwiGLU hidden values and the logits with room to spare). bf16 and f16
// weights are never widened as a whole. Measured: llama3-8b's decode{ctx=4096} on bf16
// weights, 16.96 GiB estimated, peaked at 16.55 GiB resident (docs/checkpoints.md).
double run_bytes(const ModelSpec& spec, const Cut& cut);

// Throws LimitError, prefixed by `source`, when the weights alone exceed the limit,
// naming the spec fields that make them so large.
void check_model_fits(const ModelSpec& spec, const std::string& source);

// Throws LimitError when one run of `cut` exceeds the limit, naming the part (weights,
// kv caches, activations) that is largest and the fields behind it.
void check_run_fits(const ModelSpec& spec, const Cut& cut, const std::string& source);

// "3.7 TiB", "512 MiB", "96 bytes": for messages.
std::string human_bytes(double bytes);

}  // namespace cutcheck
