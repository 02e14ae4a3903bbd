#include <cstring>

#include "ops/executor.h"
#include "ops/fusion_buffer.h"
#include "ops/reduce.h"
#include "tuning/timeline.h"

namespace hvd::runtime {

using common::Status;

namespace {

// The start of the entries' outputs when they lie back to back in the
// unit's order, each input either its own output or outside them all, as
// gradients that are views of one flat buffer do (see optimizer.py); else
// null. The layout of a unit is its response order on every rank, so one
// rank may take this path while another packs a fusion buffer.
uint8_t* AdjacentOutputs(const std::vector<const TensorEntry*>& entries,
                         size_t element) {
  uint8_t* start = nullptr;
  uint8_t* end = nullptr;
  for (const TensorEntry* e : entries) {
    const size_t bytes = ElementCount(e->request.shape) * element;
    if (bytes == 0) continue;
    auto* out = static_cast<uint8_t*>(e->output);
    if (start != nullptr && out != end) return nullptr;
    if (start == nullptr) start = out;
    end = out + bytes;
  }
  for (const TensorEntry* e : entries) {
    const auto* in = static_cast<const uint8_t*>(e->input);
    if (in != e->output &&
        in + ElementCount(e->request.shape) * element > start && in < end) {
      return nullptr;
    }
  }
  return start;
}

}  // namespace

Status RunAllreduce(const Backends& backends,
                    const std::vector<const TensorEntry*>& entries,
                    const std::vector<const Response*>& /*responses*/,
                    std::vector<uint8_t>* buffer,
                    std::vector<OpResult>* results, const PhaseFn& phase) {
  const Request& r = entries.front()->request;
  const size_t element = DataTypeSize(r.dtype);
  Status status;
  if (uint8_t* outputs = AdjacentOutputs(entries, element)) {
    Say(phase, kActivityAllreduce);
    for (const TensorEntry* e : entries) {
      const size_t bytes = ElementCount(e->request.shape) * element;
      if (e->output != e->input && bytes > 0) {
        std::memcpy(e->output, e->input, bytes);
      }
    }
    status =
        ReduceInPlace(backends, r, outputs, Counts(entries), UnitName(entries));
  } else {
    status =
        PackAndReduce(backends, entries, buffer, phase, kActivityAllreduce);
    if (status.ok()) {
      const uint8_t* at = buffer->data();
      for (const TensorEntry* e : entries) {
        const size_t bytes = ElementCount(e->request.shape) * element;
        if (bytes > 0) std::memcpy(e->output, at, bytes);
        at += bytes;
      }
    }
  }
  if (status.ok()) results->resize(entries.size());
  return status;
}

}  // namespace hvd::runtime
