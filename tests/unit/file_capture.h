// Captures what a command writes to a FILE* (open_memstream), for tests of
// the commands that print to stdout and stderr.
#pragma once

#include <stdio.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace dlq {

class Capture {
 public:
  Capture() : f_(open_memstream(&buf_, &len_)) {}
  ~Capture() {
    if (f_ != nullptr) std::fclose(f_);
    std::free(buf_);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::FILE* f() { return f_; }
  std::string str() {
    std::fflush(f_);
    return std::string(buf_, len_);
  }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  std::FILE* f_;
};

}  // namespace dlq
