// A small persistent pool for splitting large loops across the machine's cores.
//
// ParallelFor runs f(begin, end) over [0, n) in contiguous chunks of at least `grain`
// iterations (up to four per thread), each taken by the calling thread or a pool worker,
// whichever is free first, and returns when all are done. The chunks are fixed by n, grain and
// the number of threads, never by timing. Small ranges run inline. Workers never call into
// Python. The pool's size is the number of hardware threads less one (PIJIT_NUM_THREADS
// overrides the total).
#pragma once
#include <cstdint>
#include <functional>

namespace pijit {

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f);
int NumThreads();

}  // namespace pijit
