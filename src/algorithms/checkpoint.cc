#include "pimopt/algorithms/checkpoint.h"

#include <cstring>

#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/rng.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/data/file_util.h"

namespace pimopt {
namespace {

constexpr char kMagic[8] = {'P', 'I', 'M', 'O', 'P', 'T', 'C', 'K'};
constexpr uint32_t kVersion = 1;

template <typename T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  template <typename T>
  T Get() {
    T v;
    Need(sizeof(v));
    std::memcpy(&v, bytes_.data() + pos_, sizeof(v));
    pos_ += sizeof(v);
    return v;
  }
  void Need(uint64_t n) const {
    if (pos_ + n > bytes_.size()) throw ParseError(path_, "truncated checkpoint");
  }
  const char* Take(uint64_t n) {
    Need(n);
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& bytes_;
  const std::string& path_;
  size_t pos_ = 0;
};

uint64_t Hash(uint64_t h, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  return Mix64(h ^ bits);
}

}  // namespace

uint64_t RunFingerprint(const TrainConfig& c, const Dataset& train, const std::string& backend) {
  uint64_t h = Mix64(0x636b7074ULL);
  for (double v :
       {double(static_cast<int>(c.algorithm)), double(static_cast<int>(c.objective.loss)), c.objective.l2,
        c.objective.l1, c.objective.positive_weight, c.objective.negative_weight, double(c.objective.fit_bias),
        double(c.workers), double(c.batch), c.lr, double(static_cast<int>(c.schedule)), c.lr_decay,
        double(c.local_steps), c.rho, double(c.local_epochs), double(c.shuffle), double(c.seed),
        double(train.num_rows()), double(train.num_features())}) {
    h = Hash(h, v);
  }
  const auto labels = train.labels();
  h = Checksum64({reinterpret_cast<const uint8_t*>(labels.data()), labels.size() * sizeof(float)}, h);
  for (char ch : backend) h = Mix64(h ^ static_cast<uint8_t>(ch));
  return h;
}

void WriteCheckpoint(const Checkpoint& c, const std::string& path) {
  std::string body;
  Put<uint32_t>(body, kVersion);
  Put<uint32_t>(body, 0);
  Put<uint64_t>(body, c.fingerprint);
  Put<int32_t>(body, c.epochs_done);
  Put<uint32_t>(body, static_cast<uint32_t>(c.backend.size()));
  body += c.backend;
  Put<uint32_t>(body, static_cast<uint32_t>(c.state.vectors.size()));
  for (const auto& v : c.state.vectors) {
    Put<uint64_t>(body, v.size());
    body.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  }
  const uint64_t checksum = Checksum64({reinterpret_cast<const uint8_t*>(body.data()), body.size()});
  AtomicFileWriter writer(path, /*binary=*/true);
  writer.stream().write(kMagic, 8);
  writer.stream().write(body.data(), static_cast<std::streamsize>(body.size()));
  writer.stream().write(reinterpret_cast<const char*>(&checksum), 8);
  writer.Commit();
}

Checkpoint ReadCheckpoint(const std::string& path) {
  const std::string bytes = ReadFileToString(path);
  if (bytes.size() < 8 + 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    throw ParseError(path, "not a pimopt checkpoint (wrong magic or truncated)");
  }
  const std::string body = bytes.substr(8, bytes.size() - 16);
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (Checksum64({reinterpret_cast<const uint8_t*>(body.data()), body.size()}) != stored) {
    throw ParseError(path, "checksum mismatch: the checkpoint is truncated or corrupt");
  }
  Reader in(body, path);
  const auto version = in.Get<uint32_t>();
  if (version != kVersion) throw ParseError(path, StrCat("unsupported checkpoint version ", version));
  in.Get<uint32_t>();
  Checkpoint c;
  c.fingerprint = in.Get<uint64_t>();
  c.epochs_done = in.Get<int32_t>();
  const auto name_length = in.Get<uint32_t>();
  c.backend.assign(in.Take(name_length), name_length);
  const auto count = in.Get<uint32_t>();
  for (uint32_t i = 0; i < count; ++i) {
    const auto words = in.Get<uint64_t>();
    in.Need(words * 4);
    std::vector<uint32_t> v(words);
    std::memcpy(v.data(), in.Take(words * 4), words * 4);
    c.state.vectors.push_back(std::move(v));
  }
  if (in.pos() != body.size()) throw ParseError(path, "trailing bytes in checkpoint");
  return c;
}

}  // namespace pimopt
