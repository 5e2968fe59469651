// RapidCheck generators for specs, cuts, cases and tensors. Everything a property
// needs comes from these, so shrinking and RC_PARAMS="reproduce=..." work everywhere.
#pragma once

#include <rapidcheck.h>

#include <vector>

#include "core/tensor.h"
#include "properties/case.h"
#include "properties/shape_space.h"
#include "properties/spec_space.h"

namespace cutcheck {

// Small random Llama-family specs (SpecSpace with nothing fixed, never wide): both
// rotary styles, tied and untied heads, heads / kv_heads of 1, 2 or 4, norm_eps large
// enough to matter sometimes; dim from `min_dim`.
rc::Gen<ModelSpec> gen_spec(int64_t min_dim = 1);

// A spec, a possible cut of one of `kinds` with rows up to 4 and ctx up to 12, tokens,
// positions within the cut's ranges, seeds, and a k scale that is now and then 1000
// (scores large enough to overflow a softmax that forgets to subtract the maximum).
rc::Gen<Case> gen_case(std::vector<CutKind> kinds, int64_t min_dim = 1);
// The same for a given spec, with rows and ctx from `shapes`.
rc::Gen<Case> gen_case_for(ModelSpec spec, std::vector<CutKind> kinds, ShapeSpace shapes = ShapeSpace::small());

// Widens heads, kv_heads and ffn to multiples of tp (keeping heads / kv_heads).
void widen_for_tp(ModelSpec& spec, int64_t tp);

// A splittable cut (Decode, Batch, DecodeLayer, BatchLayer) and a tp of 1, 2 or 4, with
// the spec's heads, kv_heads and ffn widened to multiples of tp.
rc::Gen<Case> gen_split_case();

// Any cut kind with parameters that may be impossible for `spec`: layer from -1 to
// layers + 1, rows and ctx from 0, boundary values favoured.
rc::Gen<Cut> gen_any_cut(const ModelSpec& spec);

// Named tensors of every dtype with small random shapes (including empty ones) and
// arbitrary bits.
rc::Gen<TensorMap> gen_tensor_map();

}  // namespace cutcheck
