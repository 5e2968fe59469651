// A backend as a CutRunner: each cut is authored once into a program folder under `work`,
// lowered once, and run as often as asked. Generation and bisection can then drive a
// backend exactly as they drive the reference.
#pragma once

#include <memory>
#include <unordered_map>

#include "conform/backend.h"
#include "model/cut_runner.h"
#include "model/spec.h"

namespace cutcheck {

class BackendRunner : public CutRunner {
 public:
  // `weights` is a weights folder (model.safetensors) for `spec`.
  BackendRunner(Backend& backend, ModelSpec spec, fs::path weights, fs::path work);
  TensorMap run(const Cut& cut, const TensorMap& inputs) override;

 private:
  Backend& backend_;
  ModelSpec spec_;
  fs::path weights_, work_;
  std::unordered_map<Cut, std::unique_ptr<Lowered>, CutHash> lowered_;
};

}  // namespace cutcheck
