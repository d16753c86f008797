// How the prefixsim binary reaches the CUDA library (libprefixsim_gpu_cuda.so):
// through dlopen, only when a command asks for the GPU (`replay --backend
// gpu`). Linked in, the library loaded cuBLASLt (540 MB) into every command:
// 0.12 s of relocations and ~200 MB of resident memory before any work, on
// every CUDA build, for commands that never touch a GPU.
//
// The library exports one C symbol, prefixsim_cuda_plugin_v1, returning its
// entry points; the binary and the library come from the same build (same
// compiler, same headers), so C++ types cross the boundary as they would in
// one link. Tests and prefixsim-gpu-bench link the library directly.
#pragma once

#include <string>

#include "gpu/cuda_api.h"
#include "gpu/model_runner.h"

namespace prefixsim::gpu {

struct CudaPlugin {
  cuda::DeviceInfo (*query_devices)() = nullptr;
  std::unique_ptr<ModelRunner> (*make_gpu_runner)(const ModelShape& shape, int64_t num_blocks, int32_t block_size,
                                                  uint64_t seed) = nullptr;
};

// The file name dlopen looks for (next to the binary through its run path,
// or on LD_LIBRARY_PATH).
inline constexpr const char* kCudaLibraryName = "libprefixsim_gpu_cuda.so";

// Loads the library once; nullptr when it cannot be loaded, with the
// loader's reason in *why.
const CudaPlugin* load_cuda_plugin(std::string* why);

}  // namespace prefixsim::gpu

extern "C" const prefixsim::gpu::CudaPlugin* prefixsim_cuda_plugin_v1();
