// Body-regex matching throughput of RE2 (dlq::Regex, what --body-regex uses)
// against std::regex (ECMAScript, the engine --body-regex used before issue
// 28), on the bodies of the bench/search archive. std::regex lives only here,
// never in src/. Each engine searches every body with each pattern; the match
// counts must agree (exit 1 otherwise). Prints, per pattern and engine, the
// best of RUNS passes: CPU seconds of this thread, MB of body per CPU-second
// and records per CPU-second.
// Usage: regex_engines DIR [PATTERN...]   (env: RUNS=3)
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "archive/gzip.h"
#include "archive/record.h"
#include "common/regex.h"

namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Every record body of every .json.gz object under `dir`.
std::vector<std::string> LoadBodies(const std::string& dir) {
  std::vector<std::filesystem::path> objects;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().string().ends_with(".json.gz")) objects.push_back(e.path());
  }
  std::sort(objects.begin(), objects.end());
  std::vector<std::string> bodies;
  for (const auto& path : objects) {
    std::ifstream in(path, std::ios::binary);
    std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    dlq::Result<std::string> lines = dlq::GzipDecompress(gz, size_t{1} << 30);
    if (!lines.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), lines.status().ToString().c_str());
      std::exit(1);
    }
    std::string_view rest = *lines;
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
      dlq::Result<dlq::ArchiveRecord> r = dlq::ParseRecordJson(line);
      if (!r.ok()) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), r.status().ToString().c_str());
        std::exit(1);
      }
      bodies.push_back(std::move(r->body));
    }
  }
  return bodies;
}

struct Pass {
  double cpu_s = 1e300;
  size_t matches = 0;
};

// The best (least CPU) of `runs` passes of `match` over every body.
template <typename Match>
Pass Best(const std::vector<std::string>& bodies, int runs, Match match) {
  Pass best;
  for (int i = 0; i < runs; ++i) {
    double start = ThreadCpuSeconds();
    size_t matches = 0;
    for (const std::string& body : bodies) matches += match(body) ? 1 : 0;
    double cpu = ThreadCpuSeconds() - start;
    if (cpu < best.cpu_s) best = {cpu, matches};
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: regex_engines DIR [PATTERN...]\n");
    return 2;
  }
  std::vector<std::string> patterns(argv + 2, argv + argc);
  if (patterns.empty()) patterns = {"order-[0-9]+", R"("status":\s*"failed")"};
  const char* runs_env = std::getenv("RUNS");
  const int runs = runs_env != nullptr ? std::max(1, std::atoi(runs_env)) : 3;

  const std::vector<std::string> bodies = LoadBodies(argv[1]);
  size_t bytes = 0;
  for (const std::string& b : bodies) bytes += b.size();
  const double mb = static_cast<double>(bytes) / 1e6;
  fmt::print("{} bodies, {:.1f} MB of body text; best of {} passes, CPU of one thread\n", bodies.size(), mb, runs);
  fmt::print("{:<34} {:<10} {:>8} {:>9} {:>10} {:>14}\n", "pattern", "engine", "matches", "cpu s", "MB/cpu-s",
             "records/cpu-s");
  bool agree = true;
  for (const std::string& pattern : patterns) {
    dlq::Result<dlq::Regex> re2 = dlq::Regex::Compile(pattern);
    if (!re2.ok()) {
      std::fprintf(stderr, "%s: %s\n", pattern.c_str(), re2.status().message().c_str());
      return 2;
    }
    const std::regex ecma(pattern, std::regex::ECMAScript);
    Pass a = Best(bodies, runs, [&](const std::string& b) { return re2->Search(b); });
    Pass b = Best(bodies, runs, [&](const std::string& s) { return std::regex_search(s, ecma); });
    for (const auto& [engine, p] : {std::pair<const char*, Pass>{"RE2", a}, {"std::regex", b}}) {
      fmt::print("{:<34} {:<10} {:>8} {:>9.3f} {:>10.1f} {:>14.0f}\n", pattern, engine, p.matches, p.cpu_s,
                 mb / p.cpu_s, static_cast<double>(bodies.size()) / p.cpu_s);
    }
    fmt::print("{:<34} RE2 is {:.1f}x std::regex\n", pattern, b.cpu_s / a.cpu_s);
    if (a.matches != b.matches) {
      std::fprintf(stderr, "MISMATCH: %s: RE2 %zu, std::regex %zu\n", pattern.c_str(), a.matches, b.matches);
      agree = false;
    }
  }
  return agree ? 0 : 1;
}
