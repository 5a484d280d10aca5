// The backend registry (registry.h). The backend libraries are linked whole (CMake WHOLE_ARCHIVE), so no
// registration is dropped by the linker.
#include "pimopt/backends/registry.h"

#include <algorithm>
#include <mutex>

#include "pimopt/core/error.h"

namespace pimopt {
namespace {

std::map<std::string, BackendRegistration>& Entries() {
  static std::map<std::string, BackendRegistration> entries;
  return entries;
}

std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}

}  // namespace

bool RegisterBackend(BackendRegistration registration) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  const std::string name = registration.traits.name;
  PIMOPT_CHECK(!name.empty() && Entries().count(name) == 0, "backend '", name, "' registered twice");
  PIMOPT_CHECK(registration.make && registration.default_options, "backend '", name, "' registered without factory");
  Entries().emplace(name, std::move(registration));
  return true;
}

std::vector<const BackendRegistration*> RegisteredBackends() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<const BackendRegistration*> all;
  for (const auto& [name, entry] : Entries()) all.push_back(&entry);
  std::stable_sort(all.begin(), all.end(), [](const BackendRegistration* a, const BackendRegistration* b) {
    return a->traits.listing_order < b->traits.listing_order;
  });
  return all;
}

const BackendRegistration& FindBackend(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    const auto it = Entries().find(name);
    if (it != Entries().end()) return it->second;
  }
  std::vector<std::string> known;
  for (const BackendRegistration* b : RegisteredBackends()) known.push_back(b->traits.name);
  throw ConfigError("--backend", StrCat("unknown backend '", name, "' (use ", JoinNames(known), ")"));
}

std::vector<std::string> BackendNamesWith(const std::function<bool(const BackendTraits&)>& has) {
  std::vector<std::string> names;
  for (const BackendRegistration* b : RegisteredBackends()) {
    if (has(b->traits)) names.push_back(b->traits.name);
  }
  return names;
}

std::vector<ParamChoice> BackendChoices() {
  std::vector<ParamChoice> choices;
  for (const BackendRegistration* b : RegisteredBackends()) choices.push_back({b->traits.name, b->traits.help, {}});
  return choices;
}

BackendOptionSet::BackendOptionSet() {
  for (const BackendRegistration* b : RegisteredBackends()) Add(b->traits.name, b->default_options());
}

std::unique_ptr<IBackend> MakeBackend(const std::string& name, ThreadPool& pool, const BackendOptionSet& options) {
  return FindBackend(name).make(pool, options.Of(name));
}

}  // namespace pimopt
