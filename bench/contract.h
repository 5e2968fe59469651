// Benchmarks of the contraction kernel against OpenBLAS dgemm on the same shapes, and of
// this machine's memory bandwidth (the bound a decode step, which reads every weight
// once, cannot beat).
#pragma once

namespace cutcheck::bench {

void register_contractions();

}  // namespace cutcheck::bench
