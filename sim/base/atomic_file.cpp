#include "sim/base/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "sim/base/error.h"
#include "sim/base/input_limits.h"

namespace prefixsim {
namespace {

namespace fs = std::filesystem;

// ---- temporaries removed by the signal handler --------------------------
// A fixed table of C strings: the handler may only do async-signal-safe
// things (atomic loads, unlink, rmdir, write, _exit). Entries are owned by
// the table (strdup) and freed after their slot is cleared.
constexpr int kSlots = 256;
std::atomic<char*> g_temp_files[kSlots];
std::atomic<char*> g_temp_dirs[kSlots];

void register_path(std::atomic<char*>* table, const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (!copy) return;
  for (int i = 0; i < kSlots; ++i) {
    char* expected = nullptr;
    if (table[i].compare_exchange_strong(expected, copy)) return;
  }
  std::free(copy);  // table full: the destructor still removes it
}

void unregister_path(std::atomic<char*>* table, const std::string& path) {
  for (int i = 0; i < kSlots; ++i) {
    char* p = table[i].load();
    if (p && path == p && table[i].compare_exchange_strong(p, nullptr)) {
      std::free(p);
      return;
    }
  }
}

extern "C" void remove_temps_and_exit(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (char* p = g_temp_files[i].load()) ::unlink(p);
  for (int i = kSlots - 1; i >= 0; --i)  // deepest directories were registered last
    if (char* p = g_temp_dirs[i].load()) ::rmdir(p);
  const char msg[] = "prefixsim: interrupted: temporary files removed, no output written\n";
  const ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
  ::_exit(128 + sig);
}

std::string kind_of(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

// Temporaries a killed run (SIGKILL, a power cut) left beside `path`:
// PATH.tmp.PID and PATH.old.PID whose process no longer exists.
void remove_stale_temps(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string base = p.filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    for (const char* kind : {".tmp.", ".old."}) {
      const std::string prefix = base + kind;
      if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string digits = name.substr(prefix.size());
      if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(digits));
      if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) ::unlink(it->path().c_str());
    }
  }
}

std::string named(const std::string& flag, const std::string& path) { return flag.empty() ? path : flag + " " + path; }

}  // namespace

void check_output_file(const std::string& path, const std::string& flag) {
  if (path.empty()) throw InputError(named(flag, "''") + ": an empty output path");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // a new path
  if (S_ISREG(st.st_mode)) return;
  throw InputError(named(flag, path) + ": is " + kind_of(st) +
                   "; outputs are written only to regular files or new paths");
}

void check_output_dir(const std::string& dir, const std::string& flag) {
  if (dir.empty()) throw InputError(named(flag, "''") + ": an empty output directory");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return;  // a new directory
  if (!S_ISDIR(st.st_mode)) throw InputError(named(flag, dir) + ": is " + kind_of(st) + ", not a directory");
}

bool same_path(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const std::filesystem::path pa = std::filesystem::weakly_canonical(a, ea), pb = std::filesystem::weakly_canonical(b, eb);
  if (ea || eb)
    return std::filesystem::absolute(a).lexically_normal() == std::filesystem::absolute(b).lexically_normal();
  return pa == pb;
}

void check_not_an_input(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::stat(path.c_str(), &out) != 0) return;  // absent: it cannot be an input
  for (const std::string& in : inputs) {
    if (in.empty() || in == "-") continue;
    struct stat st {};
    if (::stat(in.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      throw InputError(named(flag, path) + ": is also an input (" + in + "); refusing to overwrite it");
  }
}

void check_output_set(const std::string& dir, const std::vector<std::string>& names, const std::string& flag,
                      const std::vector<std::string>& inputs) {
  check_output_dir(dir, flag);
  for (const std::string& name : names) {
    check_output_file(dir + "/" + name, flag);
    check_not_an_input(dir + "/" + name, flag, inputs);
  }
}

AtomicFile::AtomicFile(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
  check_output_file(path_, flag_);
  remove_stale_temps(path_);
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  register_path(g_temp_files, tmp_);
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    const int err = errno;
    unregister_path(g_temp_files, tmp_);
    throw InputError(named(flag_, path_) + ": cannot open for writing: " + std::strerror(err));
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::remove(tmp_.c_str());
  }
  unregister_path(g_temp_files, tmp_);
}

void AtomicFile::finish() {
  if (finished_) return;
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  const int err = errno;
  out_.close();
  if (!ok || !out_) throw InputError(named(flag_, path_) + ": write failed: " + std::strerror(err));
  finished_ = true;
}

void AtomicFile::commit() {
  finish();
  check_output_file(path_, flag_);  // it may have changed during a long run
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) throw InputError(named(flag_, path_) + ": cannot rename into place: " + ec.message());
  mark_committed();
}

void AtomicFile::mark_committed() {
  committed_ = true;
  unregister_path(g_temp_files, tmp_);
}

void write_file_atomic(const std::string& path, const std::string& content, const std::string& flag) {
  AtomicFile f(path, flag);
  f.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  f.commit();
}

// ---- OutputSet -------------------------------------------------------------

OutputSet::OutputSet(std::string dir, std::string flag) : dir_(std::move(dir)), flag_(std::move(flag)) {
  check_output_dir(dir_, flag_);
  // Create the missing levels one by one, remembering them to undo.
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = fs::path(dir_).lexically_normal(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) != 0 && errno != EEXIST) {
      const int err = errno;
      for (auto d = created_dirs_.rbegin(); d != created_dirs_.rend(); ++d) ::rmdir(d->c_str());
      for (const auto& d : created_dirs_) unregister_path(g_temp_dirs, d);
      throw InputError(named(flag_, dir_) + ": cannot create the output directory: " + std::strerror(err));
    }
    created_dirs_.push_back(it->string());
    register_path(g_temp_dirs, it->string());
  }
}

OutputSet::~OutputSet() {
  own_.clear();  // removes the temporaries of an uncommitted set
  if (!committed_)
    for (auto d = created_dirs_.rbegin(); d != created_dirs_.rend(); ++d) ::rmdir(d->c_str());
  for (const auto& d : created_dirs_) unregister_path(g_temp_dirs, d);
}

void OutputSet::add(const std::string& name, const std::string& content) {
  auto f = std::make_unique<AtomicFile>(dir_ + "/" + name, flag_);
  f->stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  f->finish();
  all_.push_back(f.get());
  own_.push_back(std::move(f));
}

void OutputSet::add_external(AtomicFile& file) { all_.push_back(&file); }

void OutputSet::commit() {
  for (AtomicFile* f : all_) {
    f->finish();
    check_output_file(f->path(), f->flag());
  }
  // Keep what each path held (a hard link), to put it back if a later
  // rename fails; the links are temporaries like the others.
  const std::string suffix = ".old." + std::to_string(::getpid());
  std::vector<bool> had_old(all_.size(), false);
  for (size_t i = 0; i < all_.size(); ++i) {
    const std::string old = all_[i]->path() + suffix;
    ::unlink(old.c_str());
    if (::link(all_[i]->path().c_str(), old.c_str()) == 0) {
      had_old[i] = true;
      register_path(g_temp_files, old);
    }
  }
  auto drop_old = [&] {
    for (size_t i = 0; i < all_.size(); ++i)
      if (had_old[i]) {
        const std::string old = all_[i]->path() + suffix;
        ::unlink(old.c_str());
        unregister_path(g_temp_files, old);
      }
  };
  for (size_t i = 0; i < all_.size(); ++i) {
    if (::rename(all_[i]->temp_path().c_str(), all_[i]->path().c_str()) == 0) continue;
    const int err = errno;
    for (size_t j = 0; j < i; ++j) {  // undo: the previous file back, or nothing
      const std::string old = all_[j]->path() + suffix;
      if (had_old[j]) ::rename(old.c_str(), all_[j]->path().c_str()), had_old[j] = false;
      else ::unlink(all_[j]->path().c_str());
    }
    drop_old();
    throw InputError(named(all_[i]->flag(), all_[i]->path()) + ": cannot rename into place: " + std::strerror(err) +
                     " (no output of this run was kept)");
  }
  for (AtomicFile* f : all_) f->mark_committed();
  drop_old();
  committed_ = true;
}

void install_cleanup_on_signals() {
  struct sigaction sa {};
  sa.sa_handler = remove_temps_and_exit;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::string read_whole_file(const std::string& path, const std::string& what, bool large) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not the " + what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the " + what);
  const uint64_t cap = large ? input_limits().max_input_bytes : input_limits().max_line_bytes;
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > cap)
      throw InputError(path + ": the " + what + " is larger than " + bytes_text(cap) +
                       (large ? " (raise --max-input-bytes to read it)" : " (raise --max-line-bytes to read it)"));
  }
  return text;
}

}  // namespace prefixsim
