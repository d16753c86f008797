// Writes a file under a temporary name and renames it into place on commit(),
// so a crash, an error or SIGINT never leaves a half-written output behind.
#pragma once

#include <fstream>
#include <string>

namespace prefixsim {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes, checks for write errors and renames into place; throws InputError.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

// Writes `content` to `path` atomically.
void write_file_atomic(const std::string& path, const std::string& content);

// The whole of a file, bytes as they are; InputError "PATH: cannot open the
// WHAT" when it cannot be opened (read errors after that are the parser's).
std::string read_whole_file(const std::string& path, const std::string& what);

}  // namespace prefixsim
