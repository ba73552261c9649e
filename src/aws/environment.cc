#include "aws/environment.h"

#include <cstdlib>

namespace dlq {

std::optional<std::string> Environment::GetNonEmpty(std::string_view name) const {
  auto v = GetEnv(name);
  if (!v || v->empty()) return std::nullopt;
  return v;
}

std::optional<std::string> ProcessEnvironment::GetEnv(std::string_view name) const {
  const char* v = std::getenv(std::string(name).c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Environment& DefaultEnvironment() {
  static ProcessEnvironment env;
  return env;
}

std::optional<std::string> MapEnvironment::GetEnv(std::string_view name) const {
  MutexLock lock(mu_);
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

void MapEnvironment::Set(std::string name, std::string value) {
  MutexLock lock(mu_);
  vars_.insert_or_assign(std::move(name), std::move(value));
}

void MapEnvironment::Unset(const std::string& name) {
  MutexLock lock(mu_);
  vars_.erase(name);
}

}  // namespace dlq
