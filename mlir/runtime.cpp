#include "mlir/runtime.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "core/error.h"

namespace cutcheck {
namespace {

// {allocated, aligned, offset, sizes..., strides...}, all 8-byte fields.
std::vector<int64_t> descriptor(const Tensor& t) {
  const Shape& shape = t.shape();
  std::vector<int64_t> d(3 + 2 * shape.size());
  auto address = int64_t(reinterpret_cast<uintptr_t>(t.raw().data()));
  d[0] = address, d[1] = address, d[2] = 0;
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    d[3 + i] = shape[i];
    d[3 + shape.size() + i] = stride;
    stride *= shape[i];
  }
  return d;
}

}  // namespace

CompiledProgram CompiledProgram::load(const fs::path& library) {
  CompiledProgram p;
  p.handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p.handle_) throw Error(fmt::format("cannot load '{}': {}", library.string(), dlerror()));
  p.entry_ = reinterpret_cast<void (*)(void**)>(dlsym(p.handle_, "cutcheck_entry"));
  if (!p.entry_) throw Error(fmt::format("'{}' has no cutcheck_entry", library.string()));
  return p;
}

CompiledProgram::CompiledProgram(CompiledProgram&& o) noexcept : handle_(o.handle_), entry_(o.entry_) {
  o.handle_ = nullptr;
}

CompiledProgram::~CompiledProgram() {
  if (handle_) dlclose(handle_);
}

std::vector<Tensor> CompiledProgram::call(const std::vector<const Tensor*>& arguments,
                                          const std::vector<TensorType>& results) const {
  std::vector<Tensor> out;
  for (const TensorType& t : results) out.emplace_back(t);
  std::vector<std::vector<int64_t>> descriptors;
  for (const Tensor* t : arguments) descriptors.push_back(descriptor(*t));
  for (const Tensor& t : out) descriptors.push_back(descriptor(t));
  std::vector<void*> pointers;
  for (auto& d : descriptors) pointers.push_back(d.data());
  entry_(pointers.data());
  return out;
}

}  // namespace cutcheck
