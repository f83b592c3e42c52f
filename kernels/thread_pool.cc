#include "kernels/thread_pool.h"
#include "kernels/flags.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace pijit {
namespace {

class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int size() const { return static_cast<int>(threads_.size()); }
  void Submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (stop_ && jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

int ConfiguredThreads() {
  if (auto n = flags::NumThreads()) return *n;
  return std::max(1u, std::thread::hardware_concurrency());
}

Pool& ThePool() {
  // Leaked on purpose: joining threads during static destruction at exit can deadlock.
  static Pool* pool = new Pool(ConfiguredThreads() - 1);
  return *pool;
}

}  // namespace

int NumThreads() { return ThePool().size() + 1; }

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  const int64_t max_chunks = std::max<int64_t>(1, grain > 0 ? n / grain : n);
  const int threads = NumThreads();
  // A few chunks per thread, taken in order by whichever thread is free: when a worker is
  // descheduled (a machine shared with other work), the others take its share instead of
  // waiting for it.
  const int64_t chunks = std::min<int64_t>(int64_t{4} * threads, max_chunks);
  if (chunks <= 1 || threads <= 1) {
    f(0, n);
    return;
  }
  const int64_t step = (n + chunks - 1) / chunks;
  // Shared with the helpers, which may start after the call has returned: a helper that
  // finds no chunk left touches nothing else.
  struct State {
    std::atomic<int64_t> next{0};
    std::mutex mu;
    std::condition_variable cv;
    int64_t done = 0;
  };
  auto state = std::make_shared<State>();
  // Runs chunks until none is left; true when it ran the last one to finish.
  auto work = [state, step, n, chunks](const std::function<void(int64_t, int64_t)>& fn) {
    int64_t ran = 0;
    for (int64_t c; (c = state->next.fetch_add(1)) < chunks; ++ran) {
      const int64_t b = c * step, e = std::min(n, b + step);
      if (b < e) fn(b, e);
    }
    if (ran == 0) return;
    std::lock_guard<std::mutex> lock(state->mu);
    state->done += ran;
    if (state->done == chunks) state->cv.notify_one();
  };
  const int helpers = static_cast<int>(std::min<int64_t>(threads - 1, chunks - 1));
  for (int h = 0; h < helpers; ++h) ThePool().Submit([work, &f] { work(f); });
  work(f);
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->done == chunks; });
}

}  // namespace pijit
