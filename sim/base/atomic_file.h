// Outputs that never replace what they should not, and never appear half
// written:
//  - an output path must be a regular file or a new path: a device node, a
//    FIFO, a socket, a directory or a symlink is refused (InputError naming
//    the flag), so `-o /dev/null` cannot turn /dev/null into a file;
//  - an output path that is also one of the command's inputs is refused;
//  - a file is written under a temporary name and renamed into place;
//  - a set of files (a run's --out directory) appears whole or not at all:
//    every file is written first, then all are renamed in, and a failure
//    puts back what was there (OutputSet);
//  - temporary files and directories made for outputs are removed on any
//    exit: by destructors, and by the SIGINT/SIGTERM handler that
//    install_cleanup_on_signals() installs (exit 130 / 143); the ones a
//    killed run (SIGKILL) left beside an output, PATH.tmp.PID of a process
//    that no longer exists, are removed by the next run writing PATH.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace prefixsim {

// InputError "FLAG PATH: ..." unless `path` is absent or a regular file (not
// a symlink). `flag` names the option in messages (e.g. "-o", "--junit").
void check_output_file(const std::string& path, const std::string& flag);
// InputError unless `dir` is absent or a directory.
void check_output_dir(const std::string& dir, const std::string& flag);
// InputError "FLAG PATH: is also an input (...)" when `path` names the same
// file as one of `inputs` (empty entries and "-" ignored).
void check_not_an_input(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs);
// Before a run that writes the files `names` into `dir`: check_output_dir,
// then check_output_file and check_not_an_input for each DIR/NAME, so a bad
// output is refused before the (long) run rather than after it.
void check_output_set(const std::string& dir, const std::vector<std::string>& names, const std::string& flag,
                      const std::vector<std::string>& inputs);
// Whether two paths name one file, existing or not (symlinks of existing
// parents resolved, "." and ".." folded).
bool same_path(const std::string& a, const std::string& b);

class AtomicFile {
 public:
  // Checks the path (check_output_file) and opens a temporary beside it.
  explicit AtomicFile(std::string path, std::string flag = "");
  ~AtomicFile();  // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes and closes the temporary; InputError on a write error. Nothing
  // is at path() yet. Idempotent.
  void finish();
  // finish(), then renames into place (checking the path again); throws InputError.
  void commit();
  const std::string& path() const { return path_; }
  const std::string& flag() const { return flag_; }
  const std::string& temp_path() const { return tmp_; }
  // For OutputSet, which does the rename itself.
  void mark_committed();

 private:
  std::string path_;
  std::string flag_;
  std::string tmp_;
  std::ofstream out_;
  bool finished_ = false;
  bool committed_ = false;
};

// Writes `content` to `path` atomically.
void write_file_atomic(const std::string& path, const std::string& content, const std::string& flag = "");

// Files that appear together or not at all: the files of a run's output
// directory (written by add()), plus files written elsewhere by the run
// (add_external(), e.g. replay --steps-out). commit() renames all of them
// into place; if one rename fails, the ones done are undone (the previous
// files put back). The directory is created when absent and removed again
// when the set is never committed.
class OutputSet {
 public:
  OutputSet(std::string dir, std::string flag);
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Writes DIR/name under a temporary name now (a write error throws here,
  // before anything is renamed).
  void add(const std::string& name, const std::string& content);
  // A file the caller writes and finish()es; committed with the set.
  void add_external(AtomicFile& file);
  void commit();
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::string flag_;
  std::vector<std::string> created_dirs_;  // made by us, deepest last
  std::vector<std::unique_ptr<AtomicFile>> own_;
  std::vector<AtomicFile*> all_;
  bool committed_ = false;
};

// Removes registered temporaries on SIGINT and SIGTERM, then exits 130 or
// 143 with a one-line message. Commands with their own SIGINT handling
// (replay stops its run gracefully) override SIGINT after this.
void install_cleanup_on_signals();

// The whole of a file, bytes as they are; InputError "PATH: cannot open the
// WHAT" when it cannot be opened (read errors after that are the parser's),
// and past a bound: --max-line-bytes for a file held whole as one record
// (YAML, JSON), --max-input-bytes for a `large` one (a CSV of steps or
// samples, which may hold millions of rows).
std::string read_whole_file(const std::string& path, const std::string& what, bool large = false);

}  // namespace prefixsim
