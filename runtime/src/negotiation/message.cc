#include "negotiation/message.h"

#include <charconv>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace hvd::runtime {

namespace {
constexpr std::string_view kUnnamed = ".noname.";
}  // namespace

std::string UnnamedName(OpType type, int64_t number) {
  return std::string(OpTypeName(type)) + std::string(kUnnamed) +
         std::to_string(number);
}

std::optional<int64_t> UnnamedNumber(OpType type, const std::string& name) {
  const std::string prefix =
      std::string(OpTypeName(type)) + std::string(kUnnamed);
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix)) {
    return std::nullopt;
  }
  int64_t number = 0;
  const char* end = name.data() + name.size();
  auto [at, error] = std::from_chars(name.data() + prefix.size(), end, number);
  if (error != std::errc() || at != end) return std::nullopt;
  return number;
}

using common::Status;

namespace {

class Writer {
 public:
  template <typename T>
  void Int(T value) {
    static_assert(std::is_integral_v<T>);
    using U = std::make_unsigned_t<T>;
    U bits = static_cast<U>(value);
    for (size_t i = 0; i < sizeof(T); ++i) {
      out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    }
  }
  void Double(double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    Int(bits);
  }
  void String(const std::string& s) {
    Int(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void Int64s(const std::vector<int64_t>& values) {
    Int(static_cast<uint32_t>(values.size()));
    for (int64_t v : values) Int(v);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads until the first shortfall, after which every read yields zero and
// ok() is false; callers check once at the end.
class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}

  template <typename T>
  T Int() {
    static_assert(std::is_integral_v<T>);
    using U = std::make_unsigned_t<T>;
    if (!Have(sizeof(T))) return 0;
    U bits = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      bits |= static_cast<U>(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    }
    pos_ += sizeof(T);
    return static_cast<T>(bits);
  }
  double Double() {
    uint64_t bits = Int<uint64_t>();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  std::string String() {
    uint32_t size = Int<uint32_t>();
    if (!Have(size)) return {};
    std::string s = in_.substr(pos_, size);
    pos_ += size;
    return s;
  }
  std::vector<int64_t> Int64s() {
    uint32_t count = Int<uint32_t>();
    if (!Have(static_cast<size_t>(count) * 8)) return {};
    std::vector<int64_t> values(count);
    for (auto& v : values) v = Int<int64_t>();
    return values;
  }
  // An enum stored as a byte, checked against its number of members.
  template <typename E>
  E Enum(int count) {
    uint8_t value = Int<uint8_t>();
    if (value >= count) ok_ = false;
    return static_cast<E>(value);
  }
  bool Have(size_t n) {
    if (ok_ && in_.size() - pos_ >= n) return true;
    ok_ = false;
    return false;
  }
  Status Finish(const char* what) const {
    if (ok_ && pos_ == in_.size()) return Status::Ok();
    return Status::Internal(std::string("malformed ") + what + " (" +
                            std::to_string(in_.size()) + " bytes)");
  }

 private:
  const std::string& in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

constexpr int kCodeCount = static_cast<int>(common::Code::kInternal) + 1;

// A request list's first byte holds its flags. Before `waiting` it was the
// shutdown byte (0 or 1), which reads the same; a bit this build does not
// know makes the list malformed rather than misread.
constexpr uint8_t kShutdownFlag = 1;
constexpr uint8_t kWaitingFlag = 2;
constexpr uint8_t kKnownRequestFlags = kShutdownFlag | kWaitingFlag;
constexpr int kKindCount = 2;

void Put(Writer& w, const Request& r) {
  w.Int(static_cast<uint8_t>(r.type));
  w.Int(static_cast<uint8_t>(r.dtype));
  w.Int(static_cast<uint8_t>(r.op));
  w.Int(r.root);
  w.Double(r.prescale);
  w.Double(r.postscale);
  w.String(r.name);
  w.Int64s(r.shape);
  w.Int64s(r.splits);
  w.String(r.group);
  w.Int(r.device);
}

Request GetRequest(Reader& r) {
  Request q;
  q.type = r.Enum<OpType>(kOpTypeCount);
  q.dtype = r.Enum<DataType>(kDataTypeCount);
  q.op = r.Enum<ReduceOp>(kReduceOpCount);
  q.root = r.Int<int32_t>();
  q.prescale = r.Double();
  q.postscale = r.Double();
  q.name = r.String();
  q.shape = r.Int64s();
  q.splits = r.Int64s();
  q.group = r.String();
  q.device = r.Int<int32_t>();
  return q;
}

}  // namespace

std::string Encode(const RequestList& list) {
  Writer w;
  w.Int(static_cast<uint8_t>((list.shutdown ? kShutdownFlag : 0) |
                             (list.waiting ? kWaitingFlag : 0)));
  w.Int(static_cast<uint32_t>(list.requests.size()));
  for (const Request& r : list.requests) Put(w, r);
  return w.Take();
}

Status Decode(const std::string& bytes, RequestList* list) {
  Reader r(bytes);
  const uint8_t flags = r.Int<uint8_t>();
  if ((flags & ~kKnownRequestFlags) != 0) {
    return Status::Internal("malformed request list (unknown flags " +
                            std::to_string(flags) +
                            "): do all ranks run the same hvd build?");
  }
  list->shutdown = (flags & kShutdownFlag) != 0;
  list->waiting = (flags & kWaitingFlag) != 0;
  uint32_t count = r.Int<uint32_t>();
  list->requests.clear();
  for (uint32_t i = 0; i < count && r.Have(1); ++i) {
    list->requests.push_back(GetRequest(r));
  }
  return r.Finish("request list");
}

std::string Encode(const ResponseList& list) {
  Writer w;
  w.Int(static_cast<uint8_t>(list.shutdown));
  w.String(list.stop);
  w.Int(static_cast<uint8_t>(list.tuning.has_value()));
  if (list.tuning) {
    w.Int(list.tuning->fusion_threshold);
    w.Int(list.tuning->cycle_time_us);
    w.Int(static_cast<uint8_t>(list.tuning->cache_enabled));
    w.Int(static_cast<uint8_t>(list.tuning->hierarchical_allreduce));
  }
  w.Int(static_cast<uint32_t>(list.responses.size()));
  for (const Response& r : list.responses) {
    w.Int(static_cast<uint8_t>(r.kind));
    Put(w, r.request);
    w.Int64s(r.sizes);
    w.Int(static_cast<uint8_t>(r.error_code));
    w.String(r.error_message);
  }
  return w.Take();
}

Status Decode(const std::string& bytes, ResponseList* list) {
  Reader r(bytes);
  list->shutdown = r.Int<uint8_t>() != 0;
  list->stop = r.String();
  list->tuning.reset();
  if (r.Int<uint8_t>() != 0) {
    Tuning t;
    t.fusion_threshold = r.Int<int64_t>();
    t.cycle_time_us = r.Int<int64_t>();
    t.cache_enabled = r.Int<uint8_t>() != 0;
    t.hierarchical_allreduce = r.Int<uint8_t>() != 0;
    list->tuning = t;
  }
  uint32_t count = r.Int<uint32_t>();
  list->responses.clear();
  for (uint32_t i = 0; i < count && r.Have(1); ++i) {
    Response p;
    p.kind = r.Enum<Response::Kind>(kKindCount);
    p.request = GetRequest(r);
    p.sizes = r.Int64s();
    p.error_code = r.Enum<common::Code>(kCodeCount);
    p.error_message = r.String();
    list->responses.push_back(std::move(p));
  }
  return r.Finish("response list");
}

}  // namespace hvd::runtime
