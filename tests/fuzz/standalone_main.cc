// A libFuzzer-compatible driver for builds without libFuzzer (g++): runs every file of the corpus directories given,
// then --runs N mutations of them (bit flips, byte changes, truncations, duplications, insertions of interesting
// numbers), drawn from a fixed seed, so a failure repeats. An input that crashes or throws anything but
// pimopt::Error ends the run: the input is written to ./crash-standalone and the exception is printed.
//   fuzz_standalone --target TARGET [--runs N] [--seed S] CORPUS_DIR...
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" bool PimoptFuzzSelectTarget(const char* name);

namespace {

std::vector<uint8_t> ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void Mutate(std::vector<uint8_t>& b, std::mt19937_64& rng) {
  static const char* kTokens[] = {"0", "-1", "4294967295", "18446744073709551615", "1e39", "nan", "inf", ":", " ",
                                  "\n", "2147483648", "268435456", "-0", "1e-45"};
  const int ops = 1 + static_cast<int>(rng() % 4);
  for (int o = 0; o < ops; ++o) {
    const size_t at = b.empty() ? 0 : rng() % (b.size() + 1);
    switch (rng() % 7) {
      case 0:
        if (!b.empty()) b[at % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:
        if (!b.empty()) b[at % b.size()] = static_cast<uint8_t>(rng());
        break;
      case 2:
        b.resize(at);
        break;
      case 3: {  // duplicate a span
        if (b.empty()) break;
        const size_t from = rng() % b.size(), len = 1 + rng() % std::min<size_t>(64, b.size() - from);
        const std::vector<uint8_t> span(b.begin() + from, b.begin() + from + len);
        b.insert(b.begin() + at, span.begin(), span.end());
        break;
      }
      case 4: {  // a textual number that readers mishandle
        const char* t = kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))];
        b.insert(b.begin() + at, t, t + std::strlen(t));
        break;
      }
      case 5: {  // a binary 32- or 64-bit extreme
        const uint64_t v = (rng() % 2) ? ~uint64_t{0} : (uint64_t{1} << (rng() % 64));
        const size_t n = (rng() % 2) ? 4 : 8;
        for (size_t i = 0; i < n && at + i < b.size(); ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
        break;
      }
      default:  // erase a span
        if (!b.empty() && at < b.size()) b.erase(b.begin() + at, b.begin() + std::min(b.size(), at + 1 + rng() % 16));
    }
  }
}

bool RunOne(const std::vector<uint8_t>& input) {
  try {
    LLVMFuzzerTestOneInput(input.data(), input.size());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: the input threw %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "FAIL: the input threw a non-standard exception\n");
  }
  std::ofstream("crash-standalone", std::ios::binary).write(reinterpret_cast<const char*>(input.data()),
                                                            static_cast<std::streamsize>(input.size()));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t runs = 1000, seed = 1;
  bool target_given = false;
  std::vector<std::vector<uint8_t>> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--target" && i + 1 < argc) {
      if (!PimoptFuzzSelectTarget(argv[++i])) {
        std::fprintf(stderr, "--target: unknown fuzz target '%s'\n", argv[i]);
        return 2;
      }
      target_given = true;
    } else if (arg == "--runs" && i + 1 < argc) {
      runs = std::stoull(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) corpus.push_back(ReadAll(entry.path()));
      }
    }
  }
  if (!target_given) {
    std::fprintf(stderr, "usage: fuzz_standalone --target TARGET [--runs N] [--seed S] CORPUS_DIR...\n");
    return 2;
  }
  if (corpus.empty()) corpus.emplace_back();
  for (const auto& input : corpus) {
    if (!RunOne(input)) return 1;
  }
  std::mt19937_64 rng(seed);
  for (uint64_t r = 0; r < runs; ++r) {
    std::vector<uint8_t> input = corpus[rng() % corpus.size()];
    Mutate(input, rng);
    if (!RunOne(input)) return 1;
  }
  std::printf("%zu corpus inputs and %llu mutations: no failure\n", corpus.size(),
              static_cast<unsigned long long>(runs));
  return 0;
}
