// The binary's side of cuda_plugin.h: dlopen on first use.
#include <dlfcn.h>

#include <mutex>

#include "gpu/cuda_plugin.h"

namespace prefixsim::gpu {

const CudaPlugin* load_cuda_plugin(std::string* why) {
  static std::once_flag once;
  static const CudaPlugin* plugin = nullptr;
  static std::string error;
  std::call_once(once, [] {
    // RTLD_LOCAL: the library's symbols (its own copy of the rooms it links)
    // stay its own; the binary reaches it only through the entry points.
    void* lib = ::dlopen(kCudaLibraryName, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = ::dlerror();
      error = e ? e : "dlopen failed";
      return;
    }
    using Entry = const CudaPlugin* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(lib, "prefixsim_cuda_plugin_v1"));
    if (!entry) {
      error = std::string(kCudaLibraryName) + " has no prefixsim_cuda_plugin_v1 (a library of another version?)";
      return;
    }
    plugin = entry();
  });
  if (!plugin && why) *why = error;
  return plugin;
}

}  // namespace prefixsim::gpu
