// Helpers for the tests: run one op, build small tensors, find the shared folder.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "author/builder.h"
#include "campaign/campaign.h"
#include "core/files.h"
#include "core/limits.h"
#include "reference/interpreter.h"

namespace cutcheck::test {

// The time limit of every legitimate run in a test (a backend run, a tool, a shrink, a
// wait for threads): far beyond what one takes on a loaded machine, so that no verdict
// depends on the machine's load. A test whose subject is a time limit uses a backend that
// never answers, not one that answers slowly.
constexpr double generous_seconds = 3600;

// A memory limit for one scope, put back however the scope ends.
class ScopedMemoryLimit {
 public:
  explicit ScopedMemoryLimit(uint64_t bytes) : saved_(memory_limit()) { set_memory_limit(bytes); }
  ~ScopedMemoryLimit() { set_memory_limit(saved_); }
  ScopedMemoryLimit(const ScopedMemoryLimit&) = delete;
  ScopedMemoryLimit& operator=(const ScopedMemoryLimit&) = delete;

 private:
  uint64_t saved_;
};

// Runs one op on the given operands (as program inputs) and returns its result.
Tensor run_op(OpKind kind, const std::vector<Tensor>& operands, std::vector<Attr> attrs = {},
              std::optional<TensorType> stated = std::nullopt);

std::vector<float> floats(const Tensor& t);
std::vector<int32_t> ints_of(const Tensor& t);

// ../shared beside the clone, or nullopt when it is not there.
std::optional<fs::path> shared_dir();

// A whole file that a test wrote or holds, of any size it may have (read_file with no
// kind's limit).
std::string read_whole(const fs::path& path);

// A fresh empty folder under the build's temporary directory.
fs::path temp_dir(const std::string& name);
// Removes every folder temp_dir made in this process (the test binary's main does, when
// every test passed; a failure's folders stay to be looked at).
void remove_temp_dirs();

// The fault catalog's names, for parameterised tests; and a name as a test-name suffix
// ('-' and '.' become '_').
std::vector<std::string> fault_names();
// A small model whose matrices are stored in `dtype`, every row whole blocks of every
// format (256 values: the K-quants'), splitting over 2 chips on whole blocks.
ModelSpec blocks_spec(DType dtype);
// Whether a fault acts only on quantized weights (a spec stored in a block format).
bool quantized_fault(const std::string& name);
std::string param_name(std::string name);

// Through `backend`, one case each of Decode, Prefill, BatchEmbed and DecodeHead of `tiny`
// with bf16 weights and with f16 ones (`base` gives the rest): every case passes, bit for bit.
void expect_half_weights_bitwise(Backend& backend, ConformOptions base);

}  // namespace cutcheck::test

// Skips (saying why) where ../shared is missing, unless CUTCHECK_REQUIRE_SHARED is set (CI
// sets it: the real checkpoint's tests must not go green by skipping).
#define SKIP_WITHOUT_SHARED(var)                                                                          \
  auto var##_opt = ::cutcheck::test::shared_dir();                                                        \
  if (!var##_opt && std::getenv("CUTCHECK_REQUIRE_SHARED"))                                               \
    FAIL() << "../shared (models and fixtures) is not beside the clone, and CUTCHECK_REQUIRE_SHARED is set"; \
  if (!var##_opt) GTEST_SKIP() << "../shared (models and fixtures) is not beside the clone here";       \
  const fs::path var = *var##_opt
