// A fresh path for a test's file: DIR/NAME under a directory of the system's
// temp directory named after the suite and the process (made if missing);
// any file already at the path is removed.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace dlq {

inline std::string FreshTempPath(const std::string& suite, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (suite + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / name).string();
  std::filesystem::remove(path);
  return path;
}

}  // namespace dlq
