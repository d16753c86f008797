// Ctrl-C for a command that stops gracefully. Such a command (replay)
// installs a SIGINT handler that only sets this flag, and the long loops poll
// it at safe points — each trace line read, each blocking read() that SIGINT
// interrupts (EINTR), each engine step and cache-mode request — and throw
// Interrupted, which the command turns into exit 130 with no output written.
// The other commands keep atomic_file's handler (install_cleanup_on_signals),
// which removes temporaries and exits at once, whatever thread is running.
//
// The same safe points also end a run its caller no longer needs: a thread
// points abandon_flag at a flag of its own, and a run on that thread throws
// Interrupted once the flag is set (plan's runs ahead, sim/study/plan_run.cpp).
#pragma once

#include <atomic>

namespace prefixsim {

// Set by a graceful SIGINT handler; lock-free, so safe to store from one.
inline std::atomic<bool> g_interrupt_requested{false};

// Thrown from a safe point once the flag is set.
struct Interrupted {};

inline bool interrupt_requested() { return g_interrupt_requested.load(std::memory_order_relaxed); }

// This thread's run is abandoned once *abandon_flag is set (null: never).
inline thread_local const std::atomic<bool>* abandon_flag = nullptr;

inline void throw_if_interrupted() {
  if (interrupt_requested() || (abandon_flag && abandon_flag->load(std::memory_order_relaxed))) throw Interrupted{};
}

}  // namespace prefixsim
