// A persistent worker pool shared by all provers; concurrent proofs interleave their tasks on it.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace np {

class ThreadPool {
 public:
  static ThreadPool& instance() {
    static ThreadPool* pool = new ThreadPool();  // never destroyed: workers outlive static teardown
    return *pool;
  }

  static unsigned defaultThreads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : n;
  }

  // Runs fn(i) for i in [0, nTasks) on up to `threads` threads (the caller included) and waits.
  // The first exception thrown by a task is rethrown here after all tasks have stopped.
  void run(size_t nTasks, unsigned threads, const std::function<void(size_t)>& fn) {
    if (nTasks == 0) return;
    threads = std::max(1u, threads);
    if (threads == 1 || nTasks == 1) {
      for (size_t i = 0; i < nTasks; ++i) fn(i);
      return;
    }
    ensureWorkers(threads - 1);
    auto job = std::make_shared<Job>();
    job->fn = &fn;
    job->nTasks = nTasks;
    job->maxHelpers = std::min<size_t>(threads - 1, nTasks - 1);
    {
      std::lock_guard<std::mutex> lk(mu_);
      jobs_.push_back(job);
    }
    // Wake only as many idle workers as may help; busy ones look at the queue when they finish.
    for (size_t i = 0; i < job->maxHelpers; ++i) cv_.notify_one();
    work(*job);
    {
      std::unique_lock<std::mutex> lk(mu_);
      jobs_.remove(job);
      doneCv_.wait(lk, [&] { return job->helpers == 0; });
    }
    if (job->error) std::rethrow_exception(job->error);
  }

 private:
  struct Job {
    const std::function<void(size_t)>* fn = nullptr;
    size_t nTasks = 0;
    std::atomic<size_t> next{0};
    size_t helpers = 0;  // guarded by mu_
    size_t maxHelpers = 0;
    std::atomic<bool> failed{false};
    std::exception_ptr error;  // written once, under mu_
  };

  ThreadPool() = default;

  void ensureWorkers(unsigned n) {
    std::lock_guard<std::mutex> lk(mu_);
    while (workers_.size() < n) {
      workers_.emplace_back([this] { loop(); });
      workers_.back().detach();
    }
  }

  void work(Job& job) {
    for (;;) {
      size_t i = job.next.fetch_add(1);
      if (i >= job.nTasks || job.failed.load()) break;
      try {
        (*job.fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!job.failed.exchange(true)) job.error = std::current_exception();
      }
    }
  }

  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      std::shared_ptr<Job> job;
      cv_.wait(lk, [&] {
        for (auto& j : jobs_) {
          if (j->helpers < j->maxHelpers && j->next.load() < j->nTasks) {
            job = j;
            return true;
          }
        }
        return false;
      });
      job->helpers++;
      lk.unlock();
      work(*job);
      lk.lock();
      job->helpers--;
      if (job->helpers == 0) doneCv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable doneCv_;
  std::list<std::shared_ptr<Job>> jobs_;
  std::vector<std::thread> workers_;
};

// Splits [0, n) into contiguous ranges, one task each.
inline void parallelFor(size_t n, unsigned threads, size_t minChunk,
                        const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  size_t maxChunks = (n + minChunk - 1) / std::max<size_t>(1, minChunk);
  size_t chunks = std::min<size_t>(maxChunks, (size_t)std::max(1u, threads) * 4);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  size_t per = (n + chunks - 1) / chunks;
  chunks = (n + per - 1) / per;
  ThreadPool::instance().run(chunks, threads, [&](size_t c) {
    size_t b = c * per;
    size_t e = std::min(n, b + per);
    fn(b, e);
  });
}

}  // namespace np
