// BodyBudget: how many bytes of request bodies a server holds in memory at
// once, over all its connections. A request reserves its announced length
// (a chunked one, the server's body limit) once its headers pass the
// signature check, and the reservation ends when its handler has returned,
// or when its connection goes first. A request past the budget is refused
// with 503, which clients retry: clients that hold a key cannot make the
// server hold their bodies without bound while long-polls keep every
// handler thread busy and finished requests queue for one.
//
// Thread-safe: the I/O thread reserves, handler threads release.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace hvd::common {

class BodyBudget {
 public:
  // A budget below the largest body allowed is raised to it, so that any
  // one request the server accepts fits alone.
  BodyBudget(uint64_t bytes, uint64_t largest_body);

  class Reservation {
   public:
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation();

   private:
    friend class BodyBudget;
    Reservation(std::atomic<uint64_t>* held, uint64_t bytes)
        : held_(held), bytes_(bytes) {}
    std::atomic<uint64_t>* held_;
    uint64_t bytes_;
  };

  // nullopt when `bytes` more would exceed the budget.
  std::optional<Reservation> Reserve(uint64_t bytes);
  uint64_t held() const { return held_.load(); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> held_{0};
};

}  // namespace hvd::common
