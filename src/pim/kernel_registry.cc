// Kernels loadable by name (DpuSet::Load(name)): a process-wide registry, filled by RegisterKernel.
#include <mutex>
#include <unordered_map>

#include "pimopt/pim/kernel.h"

namespace pimopt::pim {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<std::string, KernelFactory>& Registry() {
  static std::unordered_map<std::string, KernelFactory> r;
  return r;
}

}  // namespace

void RegisterKernel(const std::string& name, KernelFactory factory) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[name] = std::move(factory);
}

std::unique_ptr<Kernel> CreateKernel(const std::string& name) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(name);
  if (it == Registry().end()) throw PimError(StrCat("no kernel named '", name, "' is registered"));
  return it->second();
}

}  // namespace pimopt::pim
