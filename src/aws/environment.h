// Environment: the one seam through which the AWS settings and credential
// code reads environment variables, so tests never touch the process env.
// Implementations are thread-safe.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/mutex.h"

namespace dlq {

class Environment {
 public:
  virtual ~Environment() = default;
  // The variable's value, or nullopt when it is not set.
  virtual std::optional<std::string> GetEnv(std::string_view name) const = 0;
  // Like GetEnv, but an empty value counts as unset (as the AWS CLI treats most variables).
  std::optional<std::string> GetNonEmpty(std::string_view name) const;
};

// Reads the real process environment (getenv).
class ProcessEnvironment final : public Environment {
 public:
  std::optional<std::string> GetEnv(std::string_view name) const override;
};

// The process-wide real environment.
Environment& DefaultEnvironment();

// A map-backed environment for tests.
class MapEnvironment final : public Environment {
 public:
  MapEnvironment() = default;
  MapEnvironment(std::initializer_list<std::pair<const std::string, std::string>> vars) : vars_(vars) {}

  std::optional<std::string> GetEnv(std::string_view name) const override;
  void Set(std::string name, std::string value);
  void Unset(const std::string& name);

 private:
  mutable Mutex mu_;
  std::map<std::string, std::string, std::less<>> vars_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
