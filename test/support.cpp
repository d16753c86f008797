#include "test/support.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "prefixsim_config.h"

extern char** environ;

namespace prefixsim::test {
namespace fs = std::filesystem;

static std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string data_path(const std::string& rel) {
  return env_or("PREFIXSIM_TEST_DATA", std::string(PREFIXSIM_SOURCE_DIR) + "/test/data") + "/" + rel;
}

std::optional<std::string> shared_path(const std::string& rel) {
  const std::string p = env_or("PREFIXSIM_SHARED", std::string(PREFIXSIM_SOURCE_DIR) + "/../shared") + "/" + rel;
  if (fs::exists(p)) return p;
  return std::nullopt;
}

std::string temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  fs::path p = fs::temp_directory_path() /
               ("prefixsim-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<nlohmann::json> parse_jsonl(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

CliResult run_cli(const std::vector<std::string>& args, const std::string& stdin_text) {
  const std::string bin = env_or("PREFIXSIM_BIN", "prefixsim");
  const std::string dir = temp_dir("cli");
  const std::string in_path = dir + "/stdin", out_path = dir + "/stdout", err_path = dir + "/stderr";
  { std::ofstream(in_path, std::ios::binary) << stdin_text; }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(bin.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  CliResult r;
  if (posix_spawnp(&pid, bin.c_str(), &fa, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    throw std::runtime_error("cannot run " + bin);
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  fs::remove_all(dir);
  return r;
}

std::string with_line(const std::string& text, long line, const std::optional<std::string>& with) {
  std::istringstream in(text);
  std::string out, l;
  for (long i = 1; std::getline(in, l); ++i) {
    if (i != line)
      out += l + "\n";
    else if (with)
      out += *with + "\n";
  }
  return out;
}

std::string write_text_file(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string p = dir + "/" + name;
  std::ofstream(p) << text;
  return p;
}

}  // namespace prefixsim::test
