// What the properties check: every function they exercise, gathered in one value.
// Subject::reference() is cutcheck as it ships; a planted-bug test swaps one function
// for a faulty one and expects the property to fail.
#pragma once

#include <rapidcheck.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "author/author.h"
#include "harness/runner.h"
#include "harness/tolerance.h"
#include "properties/agreement.h"
#include "properties/case.h"

namespace cutcheck {

struct Subject {
  // Runs cuts for a spec and its weights.
  std::function<std::unique_ptr<CutRunner>(const ModelSpec&, const TensorMap&)> runner;
  // The independent implementation the runner is compared with, and the tolerance.
  std::function<std::unique_ptr<CutRunner>(const ModelSpec&, const TensorMap&)> oracle;
  Tolerance tolerance = Tolerance::bound(Precision::f32);
  // What a correct implementation may differ by: the error bounds of a cut's outputs, as
  // the reference computes them for these weights and inputs (harness/tolerance.h).
  std::function<TensorMap(const ModelSpec&, const TensorMap& weights, const Cut&, const TensorMap& inputs,
                          const Tolerance&)>
      bounds;
  // Runs cuts with the reference's definitions alone (reference/definitions.h): what the
  // interpreter's fast kernels must give, bit for bit.
  std::function<std::unique_ptr<CutRunner>(const ModelSpec&, const TensorMap&)> definitions;
  // Runs cuts split over tp chips, and authors the chips' programs.
  std::function<std::unique_ptr<CutRunner>(const ModelSpec&, const TensorMap&, int64_t)> split_runner;
  std::function<std::vector<Authored>(const Cut&, const ModelSpec&, const std::string&, int64_t)> write_split;
  // The pieces that compose a whole cut.
  std::function<std::vector<Cut>(const Cut&, const ModelSpec&)> pieces;
  // Authoring, the program text, the cut text, spec JSON, safetensors.
  std::function<Authored(const Cut&, const ModelSpec&, const std::string&)> write;
  std::function<std::string(const Program&)> print;
  std::function<Program(const std::string&)> parse;
  std::function<std::string(const Cut&)> cut_text;
  std::function<Cut(const std::string&)> parse_cut;
  std::function<std::string(const ModelSpec&)> spec_text;
  std::function<ModelSpec(const std::string&)> parse_spec;
  std::function<std::string(const TensorMap&)> encode;
  std::function<TensorMap(const std::string&)> decode;

  // The cases the properties that run cuts draw (a cut of one of the kinds; a splittable
  // cut with its tp), and a case's weights: small random specs and seeded weights, unless
  // `check --backend` fixes the spec (--spec), the tp widths (--tp) or the weights (--weights).
  std::function<rc::Gen<Case>(std::vector<CutKind>)> cases;
  std::function<rc::Gen<Case>()> split_cases;
  std::function<TensorMap(const Case&)> weights;
  // How two runs that should agree are judged: null demands equal bits (the reference);
  // with a backend as the runner, an Agreement that allows the tolerance and keeps count.
  std::shared_ptr<Agreement> agreement;

  static Subject reference();
};

// A runner that sends the cuts `faulty_for` picks to one runner and the rest to another:
// lets a test plant a bug in some cuts only (the pieces, say, or Batch).
class RoutedRunner : public CutRunner {
 public:
  RoutedRunner(std::function<bool(const Cut&)> faulty_for, std::unique_ptr<CutRunner> clean,
               std::unique_ptr<CutRunner> faulty)
      : faulty_for_(std::move(faulty_for)), clean_(std::move(clean)), faulty_(std::move(faulty)) {}
  TensorMap run(const Cut& cut, const TensorMap& inputs) override {
    return (faulty_for_(cut) ? faulty_ : clean_)->run(cut, inputs);
  }

 private:
  std::function<bool(const Cut&)> faulty_for_;
  std::unique_ptr<CutRunner> clean_, faulty_;
};

}  // namespace cutcheck
