#include "sim/study/sweep_mpi.h"

// The C API only: Open MPI's deprecated C++ bindings do not build warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "sim/base/error.h"

namespace prefixsim {
namespace {

// Worker -> rank 0: kReady (nothing) once, then kRow (uint64 index + row
// text) or kError ('I' or 'X' + message) for each point. Rank 0 -> worker:
// kWork (uint64 index) or kStop.
enum Tag : int { kReady = 1, kRow = 2, kError = 3, kWork = 4, kStop = 5 };

void send_work(int dest, uint64_t index) { MPI_Send(&index, 1, MPI_UINT64_T, dest, kWork, MPI_COMM_WORLD); }
void send_stop(int dest) { MPI_Send(nullptr, 0, MPI_BYTE, dest, kStop, MPI_COMM_WORLD); }

}  // namespace

MpiWorld::MpiWorld() {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() { MPI_Finalize(); }

bool MpiWorld::broadcast(bool ok, std::vector<size_t>& todo) const {
  constexpr uint64_t kFailed = ~uint64_t{0};
  uint64_t n = ok ? todo.size() : kFailed;
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (n == kFailed) return false;
  std::vector<uint64_t> v(todo.begin(), todo.end());
  v.resize(n);
  if (n) MPI_Bcast(v.data(), static_cast<int>(n), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  todo.assign(v.begin(), v.end());
  return true;
}

void MpiWorld::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void mpi_dispatch(const std::vector<size_t>& todo, const std::function<void(size_t, const std::string&)>& on_row) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t next = 0;
  int working = size - 1;  // workers not yet stopped
  std::string error;
  char error_kind = 0;
  std::string buf;
  while (working > 0) {
    MPI_Status st;
    MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    buf.resize(static_cast<size_t>(count));
    MPI_Recv(buf.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (st.MPI_TAG == kRow) {
      uint64_t index = 0;
      if (buf.size() < sizeof index) throw InternalError("sweep: a short row message from rank " + std::to_string(st.MPI_SOURCE));
      std::memcpy(&index, buf.data(), sizeof index);
      on_row(static_cast<size_t>(index), buf.substr(sizeof index));
    } else if (st.MPI_TAG == kError && error.empty()) {
      error_kind = buf.empty() ? 'X' : buf[0];
      error = "rank " + std::to_string(st.MPI_SOURCE) + ": " + (buf.empty() ? "" : buf.substr(1));
    }
    if (error.empty() && next < todo.size()) {
      send_work(st.MPI_SOURCE, todo[next++]);
    } else {
      send_stop(st.MPI_SOURCE);
      --working;
    }
  }
  if (!error.empty()) {
    if (error_kind == 'I') throw InputError(error);
    throw InternalError(error);
  }
}

void mpi_work(const std::function<std::string(size_t)>& run) {
  MPI_Send(nullptr, 0, MPI_BYTE, 0, kReady, MPI_COMM_WORLD);
  for (;;) {
    MPI_Status st;
    uint64_t index = 0;
    MPI_Recv(&index, 1, MPI_UINT64_T, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    if (st.MPI_TAG == kStop) return;
    std::string msg;
    int tag = kRow;
    try {
      const std::string row = run(static_cast<size_t>(index));
      msg.assign(reinterpret_cast<const char*>(&index), sizeof index);
      msg += row;
    } catch (const InputError& e) {
      tag = kError;
      msg = std::string("I") + e.what();
    } catch (const std::exception& e) {
      tag = kError;
      msg = std::string("X") + e.what();
    }
    MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_BYTE, 0, tag, MPI_COMM_WORLD);
  }
}

}  // namespace prefixsim
