// Compiling an exported function with Debian's MLIR 22 and LLVM 22: mlir-opt lowers it
// to the LLVM dialect (bufferised, results as out-parameters, loops in source order),
// mlir-translate and llc make an object, the system compiler links a shared object with
// a small entry point. Objects are cached by the hash of what went in, so a campaign
// compiles each program once.
#pragma once

#include <optional>
#include <string>

#include "core/files.h"
#include "mlir/export.h"

namespace cutcheck {

struct Toolchain {
  fs::path mlir_opt, mlir_translate, llc, compiler;
  fs::path runtime;  // libmlir_c_runner_utils: memrefCopy, for copies into strided views

  // The tools, from CUTCHECK_MLIR_BIN, /usr/lib/llvm-22/bin or PATH; nullopt and `why`
  // when one is missing.
  static std::optional<Toolchain> find(std::string* why = nullptr);
};

struct Compiled {
  fs::path library;     // the shared object
  bool cached = false;  // found in the cache rather than built
  double seconds = 0;   // building it
};

// The cache folder: CUTCHECK_MLIR_CACHE, else ~/.cache/cutcheck-mlir.
fs::path mlir_cache_dir();

// Throws Error with the failing tool's message.
Compiled compile(const MlirExport& exported, const Toolchain& tools, const fs::path& cache);

}  // namespace cutcheck
