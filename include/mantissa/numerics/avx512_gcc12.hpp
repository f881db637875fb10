#pragma once
// Internal, for the files compiled with -mavx512f (numerics and kernels), included after
// <immintrin.h>: GCC 12's AVX-512 headers fill the pass-through of unmasked intrinsics with
// a self-initialised "undefined" vector, which -Wmaybe-uninitialized (and, at -O1 as the
// sanitizer build compiles, -Wuninitialized) reports wherever they are inlined (GCC bug
// 105593, fixed in GCC 13). Those files never read an undefined lane; the rest of such a
// file is silenced with them.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
