// A clone of a function per vector width (AVX-512, AVX2, the baseline), the one this CPU
// runs picked when the program loads (x86-64 with GCC or Clang; elsewhere one version).
// Only code inlined into the clone is built for its width: a helper it calls out of line
// runs the baseline code, so the loops a clone is for sit in always_inline helpers.
// Vector widths change no bit: the reference is built without contraction or
// reassociation, so each lane rounds as the scalar code does.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define CUTCHECK_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define CUTCHECK_CLONES
#endif
