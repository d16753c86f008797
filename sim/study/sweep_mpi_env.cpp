#include <cstdlib>
#include <string>

#include "sim/study/sweep_mpi.h"

namespace prefixsim {

int mpi_launch_size() {
  // Open MPI, MPICH / Intel MPI (PMI), Slurm's srun.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(var);
    if (v && *v) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return 1;
}

}  // namespace prefixsim
