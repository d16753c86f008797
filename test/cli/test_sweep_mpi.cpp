// `mpirun -np N prefixsim sweep` writes, byte for byte, what one process
// writes (rank 0 hands the points out and gathers the rows). Skips (77)
// where prefixsim was built without MPI or mpirun is not installed.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "test/support.h"

using namespace prefixsim::test;

TEST_CASE("mpirun -np 2 and -np 3 give the one-process sweep's files byte for byte", "[cli][sweep][mpi]") {
  const char* mpirun = std::getenv("PREFIXSIM_MPIRUN");
  const char* built = std::getenv("PREFIXSIM_MPI_BUILT");
  if (!built || std::string(built) != "1") PREFIXSIM_SKIP("prefixsim built without MPI (-Dmpi=enabled)");
  if (!mpirun || !*mpirun) PREFIXSIM_SKIP("mpirun not found");
  const std::string dir = temp_dir("sweep-mpi");
  const std::string trace = dir + "/mt.jsonl";
  REQUIRE(run_cli({"generate", "multi-turn", "--requests", "200", "--seed", "9", "-o", trace}).rc == 0);
  const std::string grid = write_text_file(
      dir, "grid.yaml",
      "base:\n  trace: " + trace + "\n  kv_blocks: 200\naxes:\n  policy: [lru, s3fifo]\n  replicas: [1, 2]\n"
      "  router: [round-robin, kv-aware]\nzip:\n  - {block_size: [16, 32], max_num_batched_tokens: [2048, 4096]}\n");
  auto one = run_cli({"sweep", grid, "--out", dir + "/one", "--quiet", "--threads", "1"});
  INFO(one.err);
  REQUIRE(one.rc == 0);
  // As root, Open MPI asks for both variables; the shared-memory transport's
  // single-copy mechanism (CMA) is often refused in containers.
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
  const std::string bin = std::getenv("PREFIXSIM_BIN");
  setenv("PREFIXSIM_BIN", mpirun, 1);  // run_cli starts mpirun, which starts prefixsim
  for (const char* np : {"2", "3"}) {
    const std::string out = dir + "/np" + np;
    auto mpi = run_cli({"-np", np, "--oversubscribe", bin, "sweep", grid, "--out", out, "--quiet"});
    INFO("np " << np << ": " << mpi.err << mpi.out);
    REQUIRE(mpi.rc == 0);
    CHECK(read_file(out + "/sweep.json") == read_file(dir + "/one/sweep.json"));
    CHECK(read_file(out + "/sweep.csv") == read_file(dir + "/one/sweep.csv"));
    CHECK(read_file(out + "/sweep.md") == read_file(dir + "/one/sweep.md"));
  }
  setenv("PREFIXSIM_BIN", bin.c_str(), 1);
}
