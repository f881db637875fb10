#include "mantissa/tensor/random.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "mantissa/error.hpp"

namespace mantissa::tensor {
namespace {

// SplitMix64's output function: a bijective 64-bit mixer.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::uint64_t Rng::next_u64() {
  const std::uint64_t key = mix64(state_.seed ^ 0x6a09e667f3bcc909ull);
  return mix64(key + 0x9e3779b97f4a7c15ull * (++state_.counter));
}

double Rng::uniform() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  // Box-Muller with one of the pair; 1 - u keeps the logarithm finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

void Rng::set_block_part(const BatchPart& part) {
  if (part.parts < 1 || part.index < 0 || part.index >= part.parts) {
    throw Error("random stream: part " + std::to_string(part.index) + " of " +
                std::to_string(part.parts) + " does not exist");
  }
  part_ = part;
}

namespace {
// `parts` x `n` draws, n >= 0, the product checked: a negative block or one whose draws
// overflow the counter's step would move the stream backwards onto draws already made.
std::uint64_t block_draws(std::int64_t parts, std::int64_t n, const char* what) {
  if (n < 0) {
    throw Error(std::string("random stream: ") + what + " of " + std::to_string(n) +
                " draws (expected >= 0)");
  }
  if (parts != 0 && n > std::numeric_limits<std::int64_t>::max() / parts) {
    throw Error(std::string("random stream: ") + what + " of " + std::to_string(n) + " draws for " +
                std::to_string(parts) + " parts overflows the counter");
  }
  return static_cast<std::uint64_t>(parts * n);
}
}  // namespace

void Rng::begin_block(std::int64_t n) {
  state_.counter += block_draws(part_.index, n, "a block");
}

void Rng::end_block(std::int64_t n) {
  state_.counter += block_draws(part_.parts - 1 - part_.index, n, "a block");
}

void Rng::fill_uniform(Tensor& t, float low, float high) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (float& x : v) x = static_cast<float>(low + (high - low) * uniform());
  t.copy_from(Tensor::from_vector(v, t.shape()));
}

void Rng::fill_normal(Tensor& t, float mean, float stddev) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (float& x : v) x = static_cast<float>(mean + stddev * normal());
  t.copy_from(Tensor::from_vector(v, t.shape()));
}

}  // namespace mantissa::tensor
