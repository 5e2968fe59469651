#include "tests/helpers.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "faults/catalog.h"
#include "report/report.h"

namespace cutcheck::test {

Tensor run_op(OpKind kind, const std::vector<Tensor>& operands, std::vector<Attr> attrs,
              std::optional<TensorType> stated) {
  Builder b("one op");
  std::vector<ValueId> ids;
  TensorMap inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    std::string name = fmt::format("in{}", i);
    ids.push_back(b.input(name, operands[i].type()));
    inputs.emplace(name, operands[i]);
  }
  ValueId r = b.op(kind, ids, std::move(attrs), "result", stated);
  b.output("result", r);
  Executable exe(b.finish(), {});
  return exe.run(inputs).at("result");
}

std::vector<float> floats(const Tensor& t) {
  auto v = t.as<float>();
  return {v.begin(), v.end()};
}

std::vector<int32_t> ints_of(const Tensor& t) {
  auto v = t.as<int32_t>();
  return {v.begin(), v.end()};
}

std::optional<fs::path> shared_dir() {
  fs::path dir = CUTCHECK_SHARED_DIR;
  if (fs::exists(dir / "models" / "stories260K.bin")) return dir;
  return std::nullopt;
}

namespace {
std::string temp_prefix() { return fmt::format("cutcheck-test-{}-", ::getpid()); }
}  // namespace

std::string read_whole(const fs::path& path) { return read_file(path, uint64_t{1} << 40); }

fs::path temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / (temp_prefix() + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void remove_temp_dirs() {
  std::error_code ec;
  std::vector<fs::path> made;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec))
    if (entry.path().filename().string().starts_with(temp_prefix())) made.push_back(entry.path());
  for (const fs::path& dir : made) fs::remove_all(dir, ec);
}

std::vector<std::string> fault_names() {
  std::vector<std::string> names;
  for (const Fault& f : fault_catalog()) names.push_back(f.name);
  return names;
}

ModelSpec blocks_spec(DType dtype) {
  ModelSpec s = builtin_spec("tiny");
  s.name = "tiny-blocks";
  s.vocab = 40, s.dim = 256, s.layers = 2, s.heads = 8, s.kv_heads = 2, s.head_dim = 64, s.ffn = 512;
  s.tied = false;
  s.dtype = dtype;
  s.validate();
  return s;
}

bool quantized_fault(const std::string& name) {
  return name == "nibbles-swapped" || name == "block-scale-neighbour" || name == "last-block-dropped" ||
         name == "min-subtracted-twice";
}

std::string param_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

void expect_half_weights_bitwise(Backend& backend, ConformOptions base) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    ConformOptions o = base;
    o.spec = builtin_spec("tiny");
    o.spec->dtype = dtype;
    o.cases = 1;
    for (CutKind kind : {CutKind::decode, CutKind::prefill, CutKind::batch_embed, CutKind::decode_head}) {
      o.kinds = {kind};
      const ConformReport r = conform(backend, o);
      EXPECT_EQ(r.count(Verdict::passed), 1) << dtype_name(dtype) << "\n" << summary_table(r);
      for (const CaseResult& c : r.results)
        for (const OutputError& e : c.errors) EXPECT_EQ(e.max_abs, 0.0) << dtype_name(dtype) << ": " << e.name;
    }
  }
}

}  // namespace cutcheck::test
