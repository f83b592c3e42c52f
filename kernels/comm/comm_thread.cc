#include "kernels/comm/comm_thread.h"

#include <chrono>

namespace pijit::comm {
namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::mutex& StatsMutex() {
  static std::mutex mu;
  return mu;
}
Stats& MutableStats() {
  static Stats s;
  return s;
}

void CountBusy(double submitted) {
  const double busy = Now() - submitted;
  std::lock_guard<std::mutex> lock(StatsMutex());
  MutableStats().works += 1;
  MutableStats().busy_seconds += busy;
}

}  // namespace

Stats GetStats() {
  std::lock_guard<std::mutex> lock(StatsMutex());
  return MutableStats();
}

void ResetStats() {
  std::lock_guard<std::mutex> lock(StatsMutex());
  MutableStats() = Stats{};
}

absl::Status Work::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!done_) {
    const double start = Now();
    cv_.wait(lock, [this] { return done_; });
    std::lock_guard<std::mutex> stats(StatsMutex());
    MutableStats().waited_seconds += Now() - start;
  }
  return status_;
}

bool Work::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void CommThread::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return;
  stopping_ = false;
  running_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void CommThread::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
}

std::shared_ptr<Work> CommThread::Submit(std::function<absl::Status()> run) {
  auto work = std::make_shared<Work>();
  work->submitted_ = Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) {
      work->run_ = std::move(run);
      queue_.push_back(work);
      cv_.notify_one();
      return work;
    }
  }
  // No thread (a world of one): the work runs here, and nothing waits for it.
  absl::Status status = run();
  CountBusy(work->submitted_);
  std::lock_guard<std::mutex> lock(work->mu_);
  work->status_ = std::move(status);
  work->done_ = true;
  return work;
}

void CommThread::Loop() {
  for (;;) {
    std::shared_ptr<Work> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    absl::Status status = work->run_();
    work->run_ = nullptr;  // drops what the work held (its buffers) before anyone waits again
    CountBusy(work->submitted_);
    {
      std::lock_guard<std::mutex> lock(work->mu_);
      work->status_ = std::move(status);
      work->done_ = true;
    }
    work->cv_.notify_all();
  }
}

}  // namespace pijit::comm
