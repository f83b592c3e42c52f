// The communication thread: once a job has more than one process, every MPI call of the
// process is made by one thread, in the order the program asked for it.
//
// Two reasons. Collectives must be issued in the same order on every rank: a queue keeps the
// program's order whichever thread asks. And a non-blocking collective advances only while
// some thread calls into MPI (Open MPI progresses its collectives inside MPI_Test): this
// thread keeps calling while the caller computes, so an all-reduce started in the middle of a
// backward pass completes behind the layers still to run instead of when someone waits for it.
//
// Before Start (a world of one process), Submit runs the work at once on the caller's thread.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/status.h"

namespace pijit::comm {

// One piece of work for the communication thread, and its outcome.
class Work {
 public:
  // Blocks until the work has run and returns its status; the time blocked counts as waited
  // (Stats).
  absl::Status Wait();
  bool done() const;

 private:
  friend class CommThread;
  std::function<absl::Status()> run_;
  double submitted_ = 0;  // seconds on the steady clock
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  absl::Status status_;
};

// What the collectives cost their callers so far: `busy` is the time from each submission to
// its completion, `waited` the part of it the callers spent blocked in Work::Wait. Their
// difference is the communication hidden behind the callers' own work.
struct Stats {
  int64_t works = 0;
  double busy_seconds = 0;
  double waited_seconds = 0;
};
Stats GetStats();
void ResetStats();

class CommThread {
 public:
  ~CommThread() { Stop(); }
  void Start();
  // Runs what is queued, then joins the thread (idempotent).
  void Stop();
  bool running() const { return running_; }
  // Queues `run` (or runs it now, before Start); the caller waits on the result when it needs
  // it.
  std::shared_ptr<Work> Submit(std::function<absl::Status()> run);

 private:
  void Loop();
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Work>> queue_;
  bool running_ = false;
  bool stopping_ = false;
};

}  // namespace pijit::comm
