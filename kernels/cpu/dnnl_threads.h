// oneDNN runs its primitives on OpenMP threads. Idle OpenMP workers sleep (pijit sets
// OMP_WAIT_POLICY=PASSIVE), and waking them costs tens of microseconds per primitive: more
// than a small problem saves by splitting. SmallProblemThreads runs the primitives created
// and executed in its scope on the calling thread alone when `small`; oneDNN sizes a
// primitive for the threads available when it is created, and the primitive caches are
// keyed by problem, so a small problem's primitive is always the one-thread one.
#pragma once
#include <omp.h>

namespace pijit {

// Below this many floating-point operations (or elements touched) a primitive runs on one
// thread: ~0.1 ms of work on one core.
inline constexpr double kSmallProblemWork = 4e6;

class SmallProblemThreads {
 public:
  explicit SmallProblemThreads(double work)
      : saved_(work < kSmallProblemWork ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SmallProblemThreads() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  SmallProblemThreads(const SmallProblemThreads&) = delete;
  SmallProblemThreads& operator=(const SmallProblemThreads&) = delete;

 private:
  int saved_;
};

}  // namespace pijit
