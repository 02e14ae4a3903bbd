#include "body_budget.h"

#include <algorithm>
#include <utility>

namespace hvd::common {

BodyBudget::BodyBudget(uint64_t bytes, uint64_t largest_body)
    : limit_(std::max(bytes, largest_body)) {}

std::optional<BodyBudget::Reservation> BodyBudget::Reserve(uint64_t bytes) {
  uint64_t held = held_.load();
  do {
    if (bytes > limit_ || held > limit_ - bytes) return std::nullopt;
  } while (!held_.compare_exchange_weak(held, held + bytes));
  return Reservation(&held_, bytes);
}

BodyBudget::Reservation::Reservation(Reservation&& other) noexcept
    : held_(std::exchange(other.held_, nullptr)), bytes_(other.bytes_) {}

BodyBudget::Reservation& BodyBudget::Reservation::operator=(
    Reservation&& other) noexcept {
  if (this != &other) {
    if (held_ != nullptr) held_->fetch_sub(bytes_);
    held_ = std::exchange(other.held_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

BodyBudget::Reservation::~Reservation() {
  if (held_ != nullptr) held_->fetch_sub(bytes_);
}

}  // namespace hvd::common
