// What the checkpoint exporters (GGUF, Hugging Face) share: each weight as a file stores
// it, in the file's dtype and with the q/k rows in the file's rotary order. The tensors are
// made one at a time while the file is written, so an export holds one tensor besides the
// mapped weights.
#pragma once

#include <optional>
#include <string>

#include "core/tensor.h"
#include "model/spec.h"

namespace cutcheck {

// The dtypes a checkpoint stores: f32, f16 or bf16; throws Error naming `option` otherwise.
DType checkpoint_dtype(const std::string& name, const std::string& option);

// A projection's rows (or a bias's, or one head's norm gains with heads = 1) moved from
// rotary order `from` to `to` within each of `heads` heads: `interleaved` rotates rows
// (2i, 2i+1) of a head together, `half` rows (i, i + E/2), so interleaved row 2i + s is
// half row s E/2 + i. Any dtype; the rows are copied, never converted.
Tensor rope_rows(const Tensor& w, int64_t heads, RopeStyle from, RopeStyle to);

// How many heads the rotary order permutes weight `name` over: query heads for wq and bq,
// kv heads for wk and bk, 1 for q_norm and k_norm (one head's gains), 0 for every other.
int64_t rotary_heads(const ModelSpec& spec, const std::string& name);

// `t` in dtype `to` (f32, f16 or bf16): widening and dequantizing are exact, narrowing rounds to nearest,
// ties to even. A finite value that narrowing would make infinite (above 65504 in f16) is
// refused with an Error naming `what`: the file would hold another model.
Tensor convert_weight(const Tensor& t, DType to, const std::string& what);

// Weight `name` of `weights` (a spec's weights, in its rotary order) as a file with rotary
// order `file_order` and dtype `dtype` stores it, in a tensor of `container` (default
// `dtype`): GGUF keeps norms in F32, widened from `dtype` exactly.
Tensor exported_weight(const ModelSpec& spec, const TensorMap& weights, const std::string& name,
                       RopeStyle file_order, DType dtype, std::optional<DType> container = std::nullopt);

// An Error for a spec the format cannot express: "<format> cannot express <spec>: why".
[[noreturn]] void inexpressible(const std::string& format, const ModelSpec& spec, const std::string& why);

}  // namespace cutcheck
