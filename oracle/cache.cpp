#include "oracle/cache.h"

#include "model/signature.h"

namespace cutcheck {

Oracle::Cache::Cache(Tensor k, Tensor v, int64_t row) : k_(std::move(k)), v_(std::move(v)) {
  const CacheShape shape = CacheShape::of(k_.shape());
  width_ = shape.width;
  base_ = shape.at(shape.caches == 1 ? 0 : row, 0);
}

Oracle::Cache::Cache(int64_t width)
    : k_(TensorType{DType::f32, {1, width}}), v_(TensorType{DType::f32, {1, width}}), base_(0), width_(width) {}

Eigen::VectorXd Oracle::Cache::read(const Tensor& t, int64_t pos) const {
  return Eigen::Map<const Eigen::VectorXf>(t.as<float>().data() + base_ + pos * width_, width_).cast<double>();
}

void Oracle::Cache::store(int64_t pos, const Eigen::VectorXd& k, const Eigen::VectorXd& v) {
  Eigen::Map<Eigen::VectorXf>(k_.as_mut<float>().data() + base_ + pos * width_, width_) = k.cast<float>();
  Eigen::Map<Eigen::VectorXf>(v_.as_mut<float>().data() + base_ + pos * width_, width_) = v.cast<float>();
}

}  // namespace cutcheck
