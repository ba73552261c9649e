// Installs a CapturingLogger (common/log.h) for a test's lifetime, then puts
// back the default text logger on stderr.
#pragma once

#include <cstdio>
#include <memory>

#include "common/log.h"

namespace dlq {

class ScopedCapturingLogger {
 public:
  ScopedCapturingLogger() {
    auto logger = std::make_unique<CapturingLogger>();
    log_ = logger.get();
    SetLogger(std::move(logger));
  }
  ~ScopedCapturingLogger() { SetLogger(std::make_unique<StreamLogger>(stderr, LogFormat::kText, LogLevel::kInfo)); }
  ScopedCapturingLogger(const ScopedCapturingLogger&) = delete;
  ScopedCapturingLogger& operator=(const ScopedCapturingLogger&) = delete;

  CapturingLogger& operator*() const { return *log_; }
  CapturingLogger* operator->() const { return log_; }

 private:
  CapturingLogger* log_;
};

}  // namespace dlq
