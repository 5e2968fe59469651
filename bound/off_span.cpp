#include "bound/off_span.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace cutcheck {

namespace {

// Past this many multiply-adds a factorisation takes seconds a case; such outputs are held
// element by element alone.
constexpr double largest_factorisation = 4.3e9;

}  // namespace

std::optional<SpanWeight> span_weight(const Program& program, const std::string& output) {
  auto decl = std::find_if(program.outputs.begin(), program.outputs.end(),
                           [&](const OutputDecl& o) { return o.name == output; });
  if (decl == program.outputs.end() || program.type(decl->value).dtype != DType::f32) return std::nullopt;
  const int64_t width = program.type(decl->value).shape.empty() ? 0 : program.type(decl->value).shape.back();
  const Operation* op = program.definition(decl->value);
  while (op && op->kind == OpKind::reshape) {
    const Shape& from = program.type(op->operands[0]).shape;
    if (from.empty() || from.back() != width) return std::nullopt;
    op = program.definition(op->operands[0]);
  }
  if (!op || op->kind != OpKind::dot_general || !op->ints("rhs_batching_dimensions").empty()) return std::nullopt;
  const ValueId rhs = op->operands[1];
  const Shape& w = program.type(rhs).shape;
  const auto& contracted = op->ints("rhs_contracting_dimensions");
  if (w.size() != 2 || contracted.size() != 1) return std::nullopt;
  const int64_t n = w[size_t(1 - contracted[0])], d = w[size_t(contracted[0])];
  if (n != width || n <= d || double(n) * double(d) * double(d) > largest_factorisation) return std::nullopt;
  // The backend's W must be the reference's (or a rounding of it the runs draw): a weight,
  // read as stored or converted to f32, never an activation the backend computed itself.
  if (!program.weight_behind(rhs)) return std::nullopt;
  return SpanWeight{rhs, int(contracted[0])};
}

OffSpan::OffSpan(const Tensor& weight, int contracting) {
  if (weight.dtype() != DType::f32 || weight.type().rank() != 2 || (contracting != 0 && contracting != 1))
    throw Error("a span needs an f32 weight of rank 2");
  n_ = weight.shape()[size_t(1 - contracting)];
  d_ = weight.shape()[size_t(contracting)];
  if (n_ <= d_) throw Error("a span of as many columns as rows is everything");
  auto w = weight.as<float>();
  Eigen::MatrixXd columns(n_, d_);  // W as n x d: row i is the weight for output element i
  for (int64_t i = 0; i < n_; ++i)
    for (int64_t k = 0; k < d_; ++k)
      columns(i, k) = contracting == 1 ? w[size_t(i * d_ + k)] : w[size_t(k * n_ + i)];
  // Q's first d columns span W's (and more only where W has fewer independent columns,
  // which makes the check looser, never unsound).
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(columns);
  const Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(n_, d_);
  basis_.resize(size_t(n_ * d_));
  for (int64_t i = 0; i < n_; ++i)
    for (int64_t k = 0; k < d_; ++k) basis_[size_t(i * d_ + k)] = q(i, k);
}

Tensor OffSpan::project_rows(const Shape& shape, const std::function<double(size_t)>& element) const {
  if (shape.empty() || shape.back() != n_) throw Error("a span's projection needs rows of its width");
  Tensor out({DType::f32, shape});
  auto o = out.as_mut<float>();
  std::vector<double> row(static_cast<size_t>(n_)), along(static_cast<size_t>(d_));
  for (size_t first = 0; first < o.size(); first += size_t(n_)) {
    bool finite = true;
    for (size_t i = 0; i < row.size(); ++i) finite = finite && std::isfinite(row[i] = element(first + i));
    if (!finite) {
      std::fill_n(o.begin() + ptrdiff_t(first), n_, NAN);
      continue;
    }
    std::fill(along.begin(), along.end(), 0.0);  // Q^T row
    for (size_t i = 0; i < row.size(); ++i)
      for (size_t k = 0; k < along.size(); ++k) along[k] += basis_[i * size_t(d_) + k] * row[i];
    for (size_t i = 0; i < row.size(); ++i) {  // row - Q Q^T row
      double in_span = 0;
      for (size_t k = 0; k < along.size(); ++k) in_span += basis_[i * size_t(d_) + k] * along[k];
      o[first + i] = float(row[i] - in_span);
    }
  }
  return out;
}

Tensor OffSpan::project(const Tensor& deviation) const {
  auto d = deviation.as<float>();
  return project_rows(deviation.shape(), [&](size_t i) { return double(d[i]); });
}

Tensor OffSpan::project_difference(const Tensor& got, const Tensor& want) const {
  auto g = got.as<float>(), w = want.as<float>();
  if (got.type() != want.type()) throw Error("a difference needs two tensors of one type");
  // Equal bits (the same infinity too) and NaN against NaN differ by nothing, as compare()
  // has them.
  return project_rows(got.shape(), [&](size_t i) {
    return g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i])) ? 0.0 : double(g[i]) - double(w[i]);
  });
}

}  // namespace cutcheck
