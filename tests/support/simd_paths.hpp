#pragma once
// Runs a check once with each of the given SIMD paths made the active one (the kernels'
// vector code: numerics::set_simd_path), printing a visible skip line for each this CPU lacks;
// the best path is active again afterwards, also when the check fails.
#include <cstdio>
#include <initializer_list>
#include <string>

#include "mantissa/numerics/cpu_features.hpp"

namespace mantissa::testing {

inline constexpr std::initializer_list<numerics::SimdPath> kEverySimdPath = {
    numerics::SimdPath::scalar, numerics::SimdPath::avx2, numerics::SimdPath::avx512};

// check(name) with name the path's name ("avx2").
template <class Check>
void on_each_simd_path(std::initializer_list<numerics::SimdPath> paths, Check&& check) {
  struct Restore {
    ~Restore() { numerics::set_simd_path(numerics::best_simd_path()); }
  } restore;
  for (numerics::SimdPath path : paths) {
    const std::string name(numerics::simd_path_name(path));
    if (!numerics::cpu_supports(path)) {
      std::printf("skip: the %s path is not on this CPU\n", name.c_str());
      continue;
    }
    numerics::set_simd_path(path);
    check(name);
  }
}

}  // namespace mantissa::testing
