// The Lambda package's `bootstrap` (scripts/package-lambda): a static program
// that execs the bundled loader on dlq-archive-lambda, so that nothing from
// the host's /lib is used (the package is built on Debian 12, whose glibc is
// newer than Amazon Linux 2023's), and no shell starts: a cold start pays for
// one static exec here instead of /bin/sh and its libraries
// (bench/lambda/README.md).
//
// Runs, from the package's root (LAMBDA_TASK_ROOT, else the directory of this
// program from /proc/self/exe):
//   ROOT/lib/ld-linux-*.so.* --library-path ROOT/lib ROOT/dlq-archive-lambda lambda ARGS...
// and, when AWS_CA_BUNDLE is unset, sets it to the first of the host's CA
// bundles that exists (the program's OpenSSL was built for Debian's paths).
// On failure it prints why and exits 127, as a shell would.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef DLQ_LAMBDA_LOADER
#error "DLQ_LAMBDA_LOADER (the loader's file name in lib/) must be defined"
#endif

int main(int argc, char** argv) {
  std::string root;
  if (const char* task_root = std::getenv("LAMBDA_TASK_ROOT"); task_root != nullptr && *task_root != '\0') {
    root = task_root;
  } else {
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
      std::fprintf(stderr, "bootstrap: cannot find the package: readlink /proc/self/exe: %s\n", std::strerror(errno));
      return 127;
    }
    root.assign(self, static_cast<size_t>(n));
    root.erase(root.rfind('/'));
  }
  if (const char* ca = std::getenv("AWS_CA_BUNDLE"); ca == nullptr || *ca == '\0') {
    for (const char* bundle : {"/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/certs/ca-certificates.crt"}) {
      struct stat st;
      if (::stat(bundle, &st) == 0 && S_ISREG(st.st_mode)) {
        ::setenv("AWS_CA_BUNDLE", bundle, 1);
        break;
      }
    }
  }
  const std::string loader = root + "/lib/" DLQ_LAMBDA_LOADER;
  std::string lib = root + "/lib";
  std::string program = root + "/dlq-archive-lambda";
  std::vector<char*> args = {const_cast<char*>(loader.c_str()), const_cast<char*>("--library-path"), lib.data(),
                             program.data(), const_cast<char*>("lambda")};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(loader.c_str(), args.data());
  std::fprintf(stderr, "bootstrap: cannot run %s: %s\n", loader.c_str(), std::strerror(errno));
  return 127;
}
