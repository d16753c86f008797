#include "sim/base/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "sim/base/error.h"

namespace prefixsim {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw InputError(path_ + ": cannot open for writing");
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::remove(tmp_.c_str());
  }
}

void AtomicFile::commit() {
  out_.flush();
  if (!out_) throw InputError(path_ + ": write failed");
  out_.close();
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw InputError(path_ + ": cannot rename into place: " + ec.message());
  committed_ = true;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFile f(path);
  f.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  f.commit();
}

std::string read_whole_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the " + what);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace prefixsim
