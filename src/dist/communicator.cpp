#include "mantissa/dist/communicator.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "dist/mpi_comm.hpp"
#include "mantissa/error.hpp"

namespace mantissa::dist {

using detail::check_mpi;
using detail::kCollectiveTag;

Communicator::Communicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {
  if (!impl_) return;
  MPI_Comm_rank(impl_->comm, &rank_);
  MPI_Comm_size(impl_->comm, &size_);
}

std::string Communicator::where() const {
  return fmt::format("dist: rank {} of {}", rank_, size_);
}

void Communicator::set_timeout_seconds(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    throw Error(
        fmt::format("{}: timeout_seconds must be a finite number > 0 (got {})", where(), seconds));
  }
  timeout_seconds_ = seconds;
}

std::vector<std::byte> Communicator::allgather(std::span<const std::byte> mine) const {
  const std::size_t n = mine.size();
  std::vector<std::byte> out(n * static_cast<std::size_t>(size_));
  // An empty span (a barrier's) may be null, which memcpy must never be given.
  if (n != 0) std::memcpy(out.data() + n * static_cast<std::size_t>(rank_), mine.data(), n);
  if (!impl_ || size_ == 1) return out;
  if (n > static_cast<std::size_t>(INT32_MAX)) {
    throw Error(fmt::format("{}: allgather of {} bytes: at most 2^31 - 1", where(), n));
  }
  detail::RequestSet set;
  const int count = static_cast<int>(n);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    set.recv(out.data() + n * static_cast<std::size_t>(p), count, MPI_BYTE, p, kCollectiveTag,
             impl_->comm, p, *this);
  }
  for (int p = 0; p < size_; ++p) {
    if (p != rank_)
      set.send(mine.data(), count, MPI_BYTE, p, kCollectiveTag, impl_->comm, p, *this);
  }
  detail::wait_all(*this, set, fmt::format("an allgather of {} bytes", n));
  return out;
}

std::vector<std::vector<std::byte>> Communicator::allgather_blobs(
    std::span<const std::byte> mine) const {
  const std::uint64_t my_size = mine.size();
  const std::vector<std::byte> sizes =
      allgather(std::as_bytes(std::span<const std::uint64_t>(&my_size, 1)));
  std::vector<std::vector<std::byte>> blobs(static_cast<std::size_t>(size_));
  for (int p = 0; p < size_; ++p) {
    std::uint64_t s = 0;
    std::memcpy(&s, sizes.data() + sizeof s * static_cast<std::size_t>(p), sizeof s);
    if (s > static_cast<std::uint64_t>(INT32_MAX)) {
      throw Error(
          fmt::format("{}: rank {} offers a blob of {} bytes: at most 2^31 - 1", where(), p, s));
    }
    blobs[static_cast<std::size_t>(p)].resize(s);
  }
  blobs[static_cast<std::size_t>(rank_)].assign(mine.begin(), mine.end());
  if (!impl_ || size_ == 1) return blobs;
  detail::RequestSet set;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    std::vector<std::byte>& b = blobs[static_cast<std::size_t>(p)];
    set.recv(b.data(), static_cast<int>(b.size()), MPI_BYTE, p, kCollectiveTag, impl_->comm, p,
             *this);
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    set.send(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, p, kCollectiveTag, impl_->comm,
             p, *this);
  }
  detail::wait_all(*this, set, "an allgather of blobs");
  return blobs;
}

void Communicator::barrier() const {
  allgather({});
}

Communicator Communicator::duplicate() const {
  if (!impl_) return *this;
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Comm_idup(impl_->comm, &dup, &request), *this, "MPI_Comm_idup");
  bool done = false;
  detail::wait_bounded(
      *this,
      [&] {
        int flag = 0;
        check_mpi(MPI_Test(&request, &flag, MPI_STATUS_IGNORE), *this, "MPI_Comm_idup");
        done = flag != 0;
        return done;
      },
      [&] { return done; },
      [&] {
        return fmt::format(
            "no progress for {:g} s duplicating the communicator: a rank is dead, "
            "hung or failed",
            timeout_seconds_);
      });
  check_mpi(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), *this, "MPI_Comm_set_errhandler");
  Communicator out(std::make_shared<Impl>(dup));
  out.timeout_seconds_ = timeout_seconds_;
  return out;
}

}  // namespace mantissa::dist
