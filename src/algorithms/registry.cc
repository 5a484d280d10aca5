// The algorithm registry: every algorithm file registers its name, traits and factory (PIMOPT_REGISTER_ALGORITHM).
// The library is linked whole (CMake WHOLE_ARCHIVE), so no registration is dropped by the linker.
#include <algorithm>
#include <map>
#include <mutex>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

struct Entry {
  AlgorithmTraits traits;
  AlgorithmFactory factory;
  AlgorithmParams params;  // empty table and no defaults: no parameters of its own
};

std::map<std::string, Entry>& Entries() {
  static std::map<std::string, Entry> entries;
  return entries;
}

std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}

const Entry* Lookup(const std::string& name) {
  for (const auto& [key, entry] : Entries()) {
    if (key == name) return &entry;
    const auto& aliases = entry.traits.aliases;
    if (std::find(aliases.begin(), aliases.end(), name) != aliases.end()) return &entry;
  }
  return nullptr;
}

}  // namespace

const char* BatchMeaningText(BatchMeaning meaning) {
  switch (meaning) {
    case BatchMeaning::kSingleRow:
      return "one row";
    case BatchMeaning::kGlobal:
      return "global batch";
    case BatchMeaning::kLocalPerWorker:
      return "local batch per worker";
    case BatchMeaning::kFullBatch:
      return "every row";
  }
  return "?";
}

bool RegisterAlgorithm(AlgorithmTraits traits, AlgorithmFactory factory, AlgorithmParams params) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  PIMOPT_CHECK(Lookup(traits.name) == nullptr, "algorithm '", traits.name, "' registered twice");
  for (const auto& alias : traits.aliases) PIMOPT_CHECK(Lookup(alias) == nullptr, "alias '", alias, "' taken");
  PIMOPT_CHECK(params.table.entries().empty() == !params.defaults, "algorithm '", traits.name,
               "': parameters need their defaults");
  const std::string name = traits.name;
  Entries()[name] = Entry{std::move(traits), std::move(factory), std::move(params)};
  return true;
}

std::vector<std::pair<std::string, const AlgorithmParams*>> RegisteredAlgorithmParams() {
  std::vector<std::pair<std::string, const AlgorithmParams*>> all;
  for (const AlgorithmTraits* t : RegisteredAlgorithms()) {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    const Entry& entry = Entries().at(t->name);
    if (entry.params.defaults) all.emplace_back(t->name, &entry.params);
  }
  return all;
}

AlgorithmOptionSet::AlgorithmOptionSet() {
  for (const auto& [name, params] : RegisteredAlgorithmParams()) Add(name, params->defaults());
}

std::vector<const AlgorithmTraits*> RegisteredAlgorithms() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<const AlgorithmTraits*> all;
  for (const auto& [name, entry] : Entries()) all.push_back(&entry.traits);
  std::sort(all.begin(), all.end(),
            [](const AlgorithmTraits* a, const AlgorithmTraits* b) { return a->listing_order < b->listing_order; });
  return all;
}

const AlgorithmTraits& FindAlgorithm(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (const Entry* entry = Lookup(name)) return entry->traits;
  }
  std::vector<std::string> known;
  for (const AlgorithmTraits* t : RegisteredAlgorithms()) known.push_back(t->name);
  throw ConfigError("--algo", StrCat("unknown algorithm '", name, "' (use ", JoinNames(known), ")"));
}

std::vector<std::string> AlgorithmNameListWith(const std::function<bool(const AlgorithmTraits&)>& has) {
  std::vector<std::string> names;
  for (const AlgorithmTraits* t : RegisteredAlgorithms()) {
    if (has(*t)) names.push_back(t->name);
  }
  return names;
}

std::string AlgorithmNamesWith(const std::function<bool(const AlgorithmTraits&)>& has) {
  return JoinNames(AlgorithmNameListWith(has), " or ");
}

std::string DistributedAlgorithmNames() {
  return AlgorithmNamesWith([](const AlgorithmTraits& t) { return t.distributed; });
}

std::unique_ptr<Algorithm> MakeAlgorithm(const std::string& name) {
  const std::string canonical = FindAlgorithm(name).name;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Entries().at(canonical).factory();
}

}  // namespace pimopt
