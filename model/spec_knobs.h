// The spec's knobs, one row each: the optional fields newer checkpoints add to the plain
// Llama model (docs/spec-knobs.md). A row holds everything about a knob that is not its
// meaning: its name, its JSON, whether a spec sets it, its text in a summary, how random
// specs draw it and the `--fix` value that holds it off. The spec (model/spec.cpp), the
// spec space (properties/spec_space.cpp), the engine protocol and the engine cases
// (engine/) read this table and keep no list of knobs of their own; the author
// (author/blocks.cpp) and the oracle (oracle/model.cpp) give a knob its meaning.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/json.h"
#include "model/spec.h"

namespace cutcheck {

// A random spec's choice: an index below `count`. The spec space draws it so that a
// failing case shrinks toward index 0: a knob lists its off value first.
using PickIndex = std::function<size_t(size_t count)>;

template <typename T>
T pick_of(const PickIndex& pick, std::initializer_list<T> options) {
  return options.begin()[pick(options.size())];
}

struct SpecKnob {
  // The knob's key in a spec JSON, its field for `--fix` and its name in the engine
  // protocol's `knobs` list (docs/engines.md).
  std::string name;
  // Whether `spec` has the knob away from its default. A spec JSON and a summary carry
  // the knob only then, so a plain Llama spec reads and prints as it always has.
  std::function<bool(const ModelSpec& spec)> is_set;
  // The knob's JSON value in `spec`, where it is set.
  std::function<Json(const ModelSpec& spec)> write;
  // Reads the knob from `object[name]`, which is present, into `spec`: a spec JSON's
  // field and a `--fix` value alike. Throws FormatError or SpecError naming `source` and
  // the key.
  std::function<void(const Json& object, const std::string& source, ModelSpec& spec)> read;
  // Throws SpecError naming the spec and the field when the knob's value in `spec` is
  // impossible (ModelSpec::validate calls it for every spec); unset: every value is possible.
  std::function<void(const ModelSpec& spec)> check = {};
  // Draws the knob for a random spec: off in most specs, and off when shrunk.
  std::function<void(const PickIndex& pick, ModelSpec& spec)> draw;
  // The `--fix` value that holds the knob at its default (an engine case fixes it for an
  // engine that does not declare the knob).
  Json off;
  // The value in a summary (" name=TEXT"); unset: the JSON value as `write` gives it.
  std::function<std::string(const ModelSpec& spec)> text = {};

  std::string summary(const ModelSpec& spec) const;  // " name=TEXT"
};

// The knobs, in the order a spec reads, prints and draws them.
const std::vector<SpecKnob>& spec_knobs();
std::vector<std::string> spec_knob_names();
// nullptr for a name that is no knob.
const SpecKnob* find_spec_knob(const std::string& name);

}  // namespace cutcheck
