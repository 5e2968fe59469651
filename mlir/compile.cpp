#include "mlir/compile.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "core/error.h"
#include "core/process.h"
#include "core/random.h"

namespace cutcheck {
namespace {

const char* pipeline =
    "--one-shot-bufferize=\"bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map\" "
    "--buffer-results-to-out-params=\"hoist-static-allocs modify-public-functions\" "
    "--buffer-deallocation-pipeline --convert-linalg-to-loops --convert-scf-to-cf --expand-strided-metadata "
    "--lower-affine --finalize-memref-to-llvm --convert-math-to-llvm --convert-arith-to-llvm --convert-func-to-llvm "
    "--convert-cf-to-llvm --reconcile-unrealized-casts";

std::optional<fs::path> locate(const std::string& tool, std::initializer_list<fs::path> dirs) {
  for (const fs::path& d : dirs)
    if (!d.empty() && ::access((d / tool).c_str(), X_OK) == 0) return d / tool;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t start = 0; start <= p.size();) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      fs::path candidate = fs::path(p.substr(start, end - start)) / tool;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
  }
  return std::nullopt;
}

// The entry point: one pointer to an array of memref descriptors, in the C interface's order.
std::string entry_source(const MlirExport& e) {
  const size_t n = e.arguments + e.results;
  std::vector<std::string> params(n, "void*"), args;
  for (size_t i = 0; i < n; ++i) args.push_back(fmt::format("d[{}]", i));
  return fmt::format("extern void _mlir_ciface_{}({});\nvoid cutcheck_entry(void** d) {{ _mlir_ciface_{}({}); }}\n",
                     e.function, fmt::join(params, ", "), e.function, fmt::join(args, ", "));
}

void step(const std::string& command, const std::string& what) {
  ProcessResult r = run_process(command, 600, 8192);
  if (!r.ok()) throw Error(fmt::format("{} {}:\n{}", what, r.describe(), r.stderr_tail));
}

}  // namespace

std::optional<Toolchain> Toolchain::find(std::string* why) {
  const char* env = std::getenv("CUTCHECK_MLIR_BIN");
  std::initializer_list<fs::path> dirs = {env ? fs::path(env) : fs::path(), "/usr/lib/llvm-22/bin"};
  Toolchain t;
  for (auto [tool, slot] : {std::pair{"mlir-opt", &t.mlir_opt}, {"mlir-translate", &t.mlir_translate}, {"llc", &t.llc}}) {
    auto found = locate(tool, dirs);
    if (!found) {
      if (why) *why = fmt::format("{} (MLIR 22) was not found: install mlir-22-tools and llvm-22, or set CUTCHECK_MLIR_BIN", tool);
      return std::nullopt;
    }
    *slot = *found;
  }
  for (const fs::path& lib : {t.mlir_opt.parent_path() / "../lib/libmlir_c_runner_utils.so.22.1",
                              fs::path("/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so.22.1")})
    if (fs::exists(lib)) t.runtime = fs::canonical(lib);
  if (t.runtime.empty()) {
    if (why) *why = "libmlir_c_runner_utils.so.22.1 (from libmlir-22) was not found beside mlir-opt";
    return std::nullopt;
  }
  auto cc = locate("c++", {});
  if (!cc) {
    if (why) *why = "no C++ compiler (c++) on PATH to link the shared object";
    return std::nullopt;
  }
  t.compiler = *cc;
  return t;
}

fs::path mlir_cache_dir() {
  if (const char* env = std::getenv("CUTCHECK_MLIR_CACHE")) return env;
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache" / "cutcheck-mlir";
}

Compiled compile(const MlirExport& e, const Toolchain& t, const fs::path& cache) {
  const auto start = std::chrono::steady_clock::now();
  const std::string key =
      fmt::format("{:016x}", fnv1a(e.text + pipeline + t.mlir_opt.string() + t.llc.string() + t.runtime.string()));
  const fs::path library = cache / (key + ".so");
  if (fs::exists(library)) return {library, true, 0};

  // Built in a folder of its own, then renamed into place: concurrent builds cannot clash.
  fs::create_directories(cache);
  const fs::path work = cache / fmt::format("build-{}-{}", key, ::getpid());
  fs::create_directories(work);
  try {
    write_file_atomic(work / "program.mlir", e.text);
    write_file_atomic(work / "entry.c", entry_source(e));
    auto q = [](const fs::path& p) { return shell_quote(p.string()); };
    step(fmt::format("{} {} {} -o {}", q(t.mlir_opt), q(work / "program.mlir"), pipeline, q(work / "program.llvm.mlir")),
         "mlir-opt");
    step(fmt::format("{} --mlir-to-llvmir {} -o {}", q(t.mlir_translate), q(work / "program.llvm.mlir"),
                     q(work / "program.ll")),
         "mlir-translate");
    step(fmt::format("{} -O2 -filetype=obj -relocation-model=pic {} -o {}", q(t.llc), q(work / "program.ll"),
                     q(work / "program.o")),
         "llc");
    step(fmt::format("{} -x c -c -fPIC {} -o {}", q(t.compiler), q(work / "entry.c"), q(work / "entry.o")), "cc");
    step(fmt::format("{} -shared -Wl,-Bsymbolic {} {} {} -Wl,-rpath,{} -o {} -lm", q(t.compiler), q(work / "program.o"),
                     q(work / "entry.o"), q(t.runtime), q(t.runtime.parent_path()), q(work / "program.so")),
         "link");
    fs::rename(work / "program.so", library);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(work, ec);
    throw;
  }
  fs::remove_all(work);
  return {library, false, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace cutcheck
