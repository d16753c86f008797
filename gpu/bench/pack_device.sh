#!/bin/bash
# Packs what a device call needs into .dev/ (ignored by git; name it in the
# device tool's `carry`): the CUDA build's binaries, the shared libraries the
# device image lacks (as one tar.xz: about 10 MB, ICU included), a Mooncake
# slice, and device_backend_run.sh. Run from the repository root on the
# machine with nvcc (no GPU needed to build):
#   gpu/bench/pack_device.sh [../shared/traces/mooncake/conversation_trace.jsonl]
# then, on the device: bash .dev/device_backend_run.sh
set -euo pipefail
trace=${1:-../shared/traces/mooncake/conversation_trace.jsonl}
[ -d build-gpu ] || meson setup build-gpu --buildtype=release -Dcuda=enabled -Dmpi=disabled -Dtests=enabled
ninja -C build-gpu sim/cli/prefixsim gpu/prefixsim-gpu-bench test/gpu/test_gpu_kernels
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
rm -rf .dev && mkdir -p .dev/bin .dev/libsrc
cp build-gpu/sim/cli/prefixsim build-gpu/test/gpu/test_gpu_kernels build-gpu/gpu/libprefixsim_gpu_cuda.so \
   build-gpu/gpu/prefixsim-gpu-bench .dev/bin/
strip .dev/bin/prefixsim .dev/bin/test_gpu_kernels .dev/bin/prefixsim-gpu-bench
# Every library ldd names but glibc, libstdc++/libgcc and CUDA's own.
ldd build-gpu/sim/cli/prefixsim | awk '/=>/{print $3}' |
  grep -v -E 'lib(c|m|stdc\+\+|gcc_s|pthread|dl|rt)\.so|libcublas|libprefixsim_gpu_cuda' |
  while read -r l; do cp -L "$l" .dev/libsrc/; done
(cd .dev/libsrc && tar -cJf ../libs.tar.xz ./*) && rm -rf .dev/libsrc
head -200 "$trace" > .dev/mc200.jsonl
cp gpu/bench/device_backend_run.sh .dev/
du -sh .dev
