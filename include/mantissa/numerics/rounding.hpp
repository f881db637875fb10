#pragma once
// Rounding modes and the counter-based random source for stochastic rounding.
#include <cstdint>
#include <optional>
#include <string_view>

namespace mantissa::numerics {

enum class Rounding : std::uint8_t {
  nearest_even,  // IEEE round to nearest, ties to even (the default)
  toward_zero,   // truncate the magnitude; a finite value never overflows to infinity
  stochastic,    // round the magnitude up with probability equal to the dropped fraction
};

std::string_view rounding_name(Rounding r);
std::optional<Rounding> parse_rounding(std::string_view name);

// A bijective 32-bit mixer (xor-shift-multiply). Building block of the random source.
constexpr std::uint32_t mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// The per-stream key: the seed and the high half of the element counter.
constexpr std::uint32_t stochastic_key(std::uint64_t seed, std::uint32_t counter_high) {
  const std::uint32_t a = mix32(static_cast<std::uint32_t>(seed) ^ 0x243f6a88u);
  const std::uint32_t b = mix32(static_cast<std::uint32_t>(seed >> 32) ^ a ^ 0x85a308d3u);
  return mix32(b ^ (counter_high * 0x9e3779b9u) ^ 0x13198a2eu);
}

// 32 random bits for element number `counter_low` of the stream `key`.
constexpr std::uint32_t stochastic_bits_keyed(std::uint32_t key, std::uint32_t counter_low) {
  return mix32(mix32(counter_low ^ key) + key);
}

// 32 random bits that depend only on (seed, counter): stochastic rounding of element i of a
// conversion that starts at counter c uses stochastic_bits(seed, c + i), so a seed and a
// counter reproduce the same roundings on every path and every CPU.
constexpr std::uint32_t stochastic_bits(std::uint64_t seed, std::uint64_t counter) {
  return stochastic_bits_keyed(stochastic_key(seed, static_cast<std::uint32_t>(counter >> 32)),
                               static_cast<std::uint32_t>(counter));
}

}  // namespace mantissa::numerics
