// Small helpers shared by host C++ and CUDA device code: bf16 <-> fp32
// conversion and the counter-based random generator that fills model weights.
// Both sides run the very same integer code, so the CPU reference and a GPU
// run see bit-identical weights and inputs. No CUDA header is included: under
// nvcc PFX_HD marks the functions __host__ __device__.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define PFX_HD __host__ __device__ __forceinline__
#else
#define PFX_HD inline
#endif

namespace prefixsim::gpu {

PFX_HD uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

PFX_HD float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// fp32 -> bf16 bits, round to nearest, ties to even (what __float2bfloat16
// and PyTorch do). NaN stays a quiet NaN; overflow rounds to infinity.
PFX_HD uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

PFX_HD float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }

// fp32 value rounded to the nearest bf16 (kept in fp32).
PFX_HD float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

PFX_HD uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Element i of the stream `seed`: uniform in [-1, 1), a multiple of 2^-23
// (24 random bits), so the value is exact in fp32.
PFX_HD float hash_uniform(uint64_t seed, uint64_t i) {
  const uint64_t r = splitmix64(seed ^ splitmix64(i));
  const int32_t v = static_cast<int32_t>(r >> 40) - (1 << 23);  // [-2^23, 2^23)
  return static_cast<float>(v) * (1.0f / 8388608.0f);
}

// The stream of the model input of the token tagged `tag` at `position`
// (input_value in model_shape.h; the GPU runner's embedding kernel).
PFX_HD uint64_t input_stream(uint64_t seed, uint64_t tag, int64_t position) {
  return splitmix64(seed ^ splitmix64(tag * 0x100000001b3ULL + static_cast<uint64_t>(position)));
}

}  // namespace prefixsim::gpu
