// Ctrl-C wherever the program is: replay blocked on a pipe waiting for the
// next trace line (engine mode, cache mode, and belady's read-ahead), and
// compare with its worker threads busy. Each must exit 130 promptly with a
// message saying it was interrupted and leave no output behind. The program
// is run as a child process and sent a real SIGINT.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "test/support.h"

namespace fs = std::filesystem;
using prefixsim::test::read_file;
using prefixsim::test::temp_dir;

namespace {

// A bound generous enough for a loaded CI machine; the handler itself
// answers at the next trace line, engine step or cache-mode request.
constexpr auto kPromptly = std::chrono::seconds(5);

struct Child {
  pid_t pid = -1;
  int stdin_fd = -1;  // write end of the child's stdin pipe, or -1
  std::string err_path;
};

// Starts prefixsim with `args`, stderr to err_path and, with `feed`, stdin
// on a pipe that holds `feed` and is kept open (the child then blocks
// reading it once it has consumed `feed`).
Child start(const std::vector<std::string>& args, const std::string& err_path, const std::string* feed) {
  const char* bin = std::getenv("PREFIXSIM_BIN");
  REQUIRE(bin != nullptr);
  int fds[2] = {-1, -1};
  if (feed) {
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(feed->size() < 4096);  // fits the pipe's buffer: one write, no blocking here
    REQUIRE(::write(fds[1], feed->data(), feed->size()) == static_cast<ssize_t>(feed->size()));
  }
  std::vector<std::string> argv_s = {bin};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child c;
  c.err_path = err_path;
  c.pid = ::fork();
  REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    if (!std::freopen(err_path.c_str(), "w", stderr)) ::_exit(99);
    if (!std::freopen("/dev/null", "w", stdout)) ::_exit(99);
    if (feed) {
      ::dup2(fds[0], 0);
      ::close(fds[0]);
      ::close(fds[1]);
    }
    ::execv(bin, argv.data());
    ::_exit(98);
  }
  if (feed) {
    ::close(fds[0]);
    c.stdin_fd = fds[1];
  }
  return c;
}

// Whether the child is blocked in read(0, ...) (/proc/PID/syscall starts
// with the syscall number 0 and the descriptor 0x0).
bool blocked_reading_stdin(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/syscall");
  std::string nr, fd;
  return (f >> nr >> fd) && nr == "0" && fd == "0x0";
}

// Sends SIGINT and waits at most kPromptly; returns the exit status, or
// fails (killing the child) when it did not stop.
int interrupt_and_wait(Child& c) {
  REQUIRE(::kill(c.pid, SIGINT) == 0);
  const auto deadline = std::chrono::steady_clock::now() + kPromptly;
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(c.pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (c.stdin_fd >= 0) ::close(c.stdin_fd);
  if (done == 0) {
    ::kill(c.pid, SIGKILL);
    ::waitpid(c.pid, &status, 0);
    FAIL("prefixsim did not stop within 5 s of SIGINT");
  }
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

// Mooncake lines, more than the 512 bytes format detection peeks at.
std::string mooncake_lines(int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += "{\"timestamp\": " + std::to_string(i * 100) + ", \"input_length\": 40, \"output_length\": 4, \"hash_ids\": [" +
         std::to_string(i % 3) + ", " + std::to_string(100 + i) + ", " + std::to_string(200 + i) + "]}\n";
  return s;
}

}  // namespace

TEST_CASE("SIGINT while replay waits on a pipe for the next trace line exits 130 with no report",
          "[hardening][cli][sigint]") {
  const std::string feed = mooncake_lines(20);
  const std::vector<std::vector<std::string>> modes = {
      {"--mode", "engine"}, {"--mode", "cache"}, {"--mode", "cache", "--policy", "belady"}};
  for (const auto& mode : modes) {
    const std::string dir = temp_dir("sigint-pipe");
    const std::string out = dir + "/out";
    std::vector<std::string> args = {"replay", "-", "--trace-block-size", "16", "--block-size", "16",
                                     "--kv-blocks", "64", "--out", out, "--quiet"};
    args.insert(args.end(), mode.begin(), mode.end());
    INFO("replay " << mode.back());
    Child c = start(args, dir + "/stderr.txt", &feed);
    // Wait until it has read all it was given and waits for more: the
    // signal then lands in the read, under replay's own handler.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!blocked_reading_stdin(c.pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(blocked_reading_stdin(c.pid));
    const int rc = interrupt_and_wait(c);
    const std::string err = read_file(c.err_path);
    INFO("stderr: " << err);
    CHECK(rc == 130);
    CHECK(err == "prefixsim replay: interrupted: no report written\n");
    CHECK_FALSE(fs::exists(out + "/report.json"));
    if (fs::exists(out))
      for (const auto& e : fs::recursive_directory_iterator(out)) CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
    fs::remove_all(dir);
  }
}

TEST_CASE("SIGINT while compare's worker threads replay exits 130 with no output", "[hardening][cli][sigint]") {
  // Enough work that it is still running when the signal comes: a
  // generated trace, many policies and sizes, two threads. (20,000 requests
  // x 8 policies x 6 sizes once took seconds; faster policies finished it in
  // under 1.5 s on an idle host, so the work is now several times larger and
  // the wait shorter: the signal must find the workers busy.)
  const std::string dir = temp_dir("sigint-compare");
  const std::string trace = dir + "/t.jsonl";
  const auto gen = prefixsim::test::run_cli({"generate", "chatbot", "--requests", "60000", "-o", trace});
  REQUIRE(gen.rc == 0);
  const std::string out = dir + "/out";
  Child c = start({"compare", trace, "--policies", "lru,fifo,lfu,lfu-da,arc,s3fifo,sieve,2q,tinylfu,gdsf,leaf-first",
                   "--kv-blocks", "500,1000,2000,4000,8000,16000,32000,64000", "--threads", "2", "--out", out},
                  dir + "/stderr.txt", nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  int status = 0;
  REQUIRE(::waitpid(c.pid, &status, WNOHANG) == 0);  // still running: else the test shows nothing
  const int rc = interrupt_and_wait(c);
  const std::string err = read_file(c.err_path);
  INFO("stderr: " << err);
  CHECK(rc == 130);
  CHECK(err.find("interrupted") != std::string::npos);
  CHECK_FALSE(fs::exists(out + "/compare.json"));
  if (fs::exists(out))
    for (const auto& e : fs::recursive_directory_iterator(out)) CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  fs::remove_all(dir);
}
