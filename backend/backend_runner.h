// A backend as a CutRunner: each cut is authored once into a program folder under `work`
// (split over `tp` chips when tp > 1), lowered once, and run as often as asked. Generation and bisection can then drive a
// backend exactly as they drive the reference.
#pragma once

#include <memory>
#include <unordered_map>

#include "backend/backend.h"
#include "model/cut_runner.h"
#include "model/spec.h"

namespace cutcheck {

class BackendRunner : public CutRunner {
 public:
  // `weights` is a weights folder (model.safetensors) for `spec`, with its shards for `tp`.
  BackendRunner(Backend& backend, ModelSpec spec, fs::path weights, fs::path work, int64_t tp = 1);
  TensorMap run(const Cut& cut, const TensorMap& inputs) override;

 private:
  Backend& backend_;
  ModelSpec spec_;
  fs::path weights_, work_;
  int64_t tp_;
  std::unordered_map<Cut, std::unique_ptr<Lowered>, CutHash> lowered_;
};

}  // namespace cutcheck
