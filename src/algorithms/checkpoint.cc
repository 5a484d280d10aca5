#include "pimopt/algorithms/checkpoint.h"

#include <cstring>
#include <string_view>

#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/rng.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/core/file_util.h"

namespace pimopt {
namespace {

constexpr char kMagic[8] = {'P', 'I', 'M', 'O', 'P', 'T', 'C', 'K'};
constexpr uint32_t kVersion = 2;

template <typename T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}
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
  std::string_view bytes_;
  const std::string& path_;
  size_t pos_ = 0;
};

uint64_t Hash(uint64_t h, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  return Mix64(h ^ bits);
}

void PutVector(std::string& out, const std::vector<uint32_t>& v) {
  Put<uint64_t>(out, v.size());
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

std::vector<uint32_t> GetVector(Reader& in) {
  const auto words = in.Get<uint64_t>();
  in.Need(words * 4);
  std::vector<uint32_t> v(words);
  std::memcpy(v.data(), in.Take(words * 4), words * 4);
  return v;
}

WorkerStates GetWorkerStates(Reader& in, size_t workers, size_t per_worker) {
  in.Need(uint64_t{workers} * per_worker * 8);  // each vector at least has its length
  WorkerStates states(workers);
  for (auto& vectors : states) {
    for (size_t i = 0; i < per_worker; ++i) vectors.push_back(GetVector(in));
  }
  return states;
}

}  // namespace

std::string EncodeWorkerStates(const WorkerStates& states) {
  std::string out;
  for (const auto& vectors : states) {
    for (const auto& v : vectors) PutVector(out, v);
  }
  return out;
}

WorkerStates DecodeWorkerStates(std::string_view bytes, size_t workers, size_t per_worker, const std::string& name) {
  Reader in(bytes, name);
  WorkerStates states = GetWorkerStates(in, workers, per_worker);
  if (in.pos() != bytes.size()) throw ParseError(name, "trailing bytes after the workers' state");
  return states;
}

uint64_t RunFingerprint(const TrainConfig& c, const Dataset& local_train, const Partition& part, Communicator& comm,
                        const std::string& backend) {
  uint64_t h = Mix64(0x636b7074ULL);
  for (double v :
       {double(static_cast<int>(c.objective.loss)), c.objective.l2,
        c.objective.l1, c.objective.positive_weight, c.objective.negative_weight, double(c.objective.fit_bias),
        double(c.workers), double(c.batch), c.lr, double(static_cast<int>(c.schedule)), c.lr_decay,
        double(c.local_steps), c.rho, double(c.local_epochs), double(c.shuffle), double(c.seed),
        double(part.total_rows), double(local_train.num_features())}) {
    h = Hash(h, v);
  }
  // The labels, as a sum over rows of a hash of (global row, label): independent of how rows are split over
  // processes. Summed as two 32-bit halves in 64-bit integers (exact for any row count below 2^31).
  int64_t halves[2] = {0, 0};
  const auto labels = local_train.labels();
  for (size_t i = 0; i < labels.size(); ++i) {
    const uint64_t m = Mix64(((part.first_row + i) << 1) | (labels[i] > 0 ? 1 : 0));
    halves[0] += static_cast<int64_t>(m >> 32);
    halves[1] += static_cast<int64_t>(m & 0xffffffffULL);
  }
  comm.AllreduceSum(halves);
  h = Mix64(h ^ ((static_cast<uint64_t>(halves[0]) << 32) + static_cast<uint64_t>(halves[1])));
  for (char ch : backend) h = Mix64(h ^ static_cast<uint8_t>(ch));
  for (char ch : c.algorithm) h = Mix64(h ^ static_cast<uint8_t>(ch));
  return h;
}

std::string SerializeCheckpoint(const Checkpoint& c) {
  std::string body;
  Put<uint32_t>(body, kVersion);
  Put<uint32_t>(body, 0);
  Put<uint64_t>(body, c.fingerprint);
  Put<int32_t>(body, c.epochs_done);
  Put<uint32_t>(body, static_cast<uint32_t>(c.backend.size()));
  body += c.backend;
  Put<uint32_t>(body, static_cast<uint32_t>(c.state.shared.size()));
  for (const auto& v : c.state.shared) PutVector(body, v);
  const size_t per_worker = c.state.per_worker.empty() ? 0 : c.state.per_worker[0].size();
  Put<uint32_t>(body, static_cast<uint32_t>(c.state.per_worker.size()));
  Put<uint32_t>(body, static_cast<uint32_t>(per_worker));
  for (const auto& vectors : c.state.per_worker) {
    PIMOPT_CHECK(vectors.size() == per_worker, "workers with different state shapes");
  }
  body += EncodeWorkerStates(c.state.per_worker);
  const uint64_t checksum = Checksum64({reinterpret_cast<const uint8_t*>(body.data()), body.size()});
  std::string out(kMagic, 8);
  out += body;
  Put<uint64_t>(out, checksum);
  return out;
}

Checkpoint ParseCheckpoint(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 8 + 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    throw ParseError(name, "not a pimopt checkpoint (wrong magic or truncated)");
  }
  const std::string body = bytes.substr(8, bytes.size() - 16);
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (Checksum64({reinterpret_cast<const uint8_t*>(body.data()), body.size()}) != stored) {
    throw ParseError(name, "checksum mismatch: the checkpoint is truncated or corrupt");
  }
  Reader in(body, name);
  const auto version = in.Get<uint32_t>();
  if (version != kVersion) throw ParseError(name, StrCat("unsupported checkpoint version ", version));
  in.Get<uint32_t>();
  Checkpoint c;
  c.fingerprint = in.Get<uint64_t>();
  c.epochs_done = in.Get<int32_t>();
  const auto name_length = in.Get<uint32_t>();
  c.backend.assign(in.Take(name_length), name_length);
  const auto shared = in.Get<uint32_t>();
  for (uint32_t i = 0; i < shared; ++i) c.state.shared.push_back(GetVector(in));
  const auto workers = in.Get<uint32_t>();
  const auto per_worker = in.Get<uint32_t>();
  c.state.per_worker = GetWorkerStates(in, workers, per_worker);
  if (in.pos() != body.size()) throw ParseError(name, "trailing bytes in checkpoint");
  return c;
}

void WriteCheckpoint(const Checkpoint& c, const std::string& path) {
  const std::string bytes = SerializeCheckpoint(c);
  AtomicFileWriter writer(path, /*binary=*/true);
  writer.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  writer.Commit();
}

Checkpoint ReadCheckpoint(const std::string& path) { return ParseCheckpoint(ReadFileToString(path), path); }

}  // namespace pimopt
