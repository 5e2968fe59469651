// Which tile kernel runs: the widest this CPU has, asked once.
#include "reference/contract_tile.h"

namespace cutcheck {
namespace {

// Half the L2 of the machines cutcheck runs on (1 MiB per core here): weights this small
// stay in cache from one decode step to the next.
constexpr int64_t cache_bytes = 512 * 1024;

struct Kernels {
  TileKernel list[3];
  int count = 0;
  Kernels() {
#ifdef CUTCHECK_X86_TILES
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) list[count++] = {"avx512", 16, tile_avx512, pack_rows_avx512, {16, stream_avx512, stream_bf16_avx512},
                        {16, stream_cached_avx512, stream_cached_bf16_avx512}, cache_bytes, {side_avx512, side_bf16_avx512}};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) list[count++] = {"avx2", 8, tile_avx2, pack_rows_plain, {8, stream_avx2, stream_bf16_avx2}, {8, stream_avx2, stream_bf16_avx2}, cache_bytes, {side_avx2, side_bf16_avx2}};
#endif
    list[count++] = {"generic", 8, tile_generic, pack_rows_plain, {8, stream_generic, stream_bf16_generic},
                      {8, stream_generic, stream_bf16_generic}, cache_bytes, {side_generic, side_bf16_generic}};
  }
};

const Kernels& kernels() {
  static const Kernels k;
  return k;
}

}  // namespace

int tile_kernel_count() { return kernels().count; }
const TileKernel& tile_kernel(int i) { return kernels().list[i]; }

}  // namespace cutcheck
