#include "ops/fusion_buffer.h"

#include <cstring>

namespace hvd::runtime {

std::string What(const TensorEntry& entry) {
  return std::string(OpTypeName(entry.request.type)) + " '" +
         entry.request.name + "'";
}

std::string UnitName(const std::vector<const TensorEntry*>& entries) {
  const TensorEntry& first = *entries.front();
  if (entries.size() == 1) return What(first);
  return "fused " + std::string(OpTypeName(first.request.type)) + " of " +
         std::to_string(entries.size()) + " tensors from '" +
         first.request.name + "'";
}

size_t RowBytes(const Request& r) {
  std::vector<int64_t> row(r.shape.begin() + 1, r.shape.end());
  return ElementCount(row) * DataTypeSize(r.dtype);
}

std::vector<size_t> Counts(const std::vector<const TensorEntry*>& entries) {
  std::vector<size_t> counts;
  for (const TensorEntry* e : entries) {
    counts.push_back(ElementCount(e->request.shape));
  }
  return counts;
}

void Pack(const std::vector<const TensorEntry*>& entries,
          std::vector<uint8_t>* buffer) {
  const size_t element = DataTypeSize(entries.front()->request.dtype);
  size_t total = 0;
  for (const TensorEntry* e : entries) total += ElementCount(e->request.shape);
  if (buffer->size() < total * element) buffer->resize(total * element);
  uint8_t* at = buffer->data();
  for (const TensorEntry* e : entries) {
    const size_t bytes = ElementCount(e->request.shape) * element;
    if (bytes > 0) std::memcpy(at, e->input, bytes);
    at += bytes;
  }
}

}  // namespace hvd::runtime
