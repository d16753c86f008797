// The CUDA library's side of cuda_plugin.h (compiled into
// libprefixsim_gpu_cuda.so).
#include "gpu/cuda_plugin.h"

extern "C" const prefixsim::gpu::CudaPlugin* prefixsim_cuda_plugin_v1() {
  static const prefixsim::gpu::CudaPlugin plugin{&prefixsim::gpu::cuda::query_devices,
                                                 &prefixsim::gpu::cuda::make_gpu_runner};
  return &plugin;
}
