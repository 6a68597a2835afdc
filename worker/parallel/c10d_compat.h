// The c10d calls the worker makes, in one place: c10d's process groups, stores and
// work handles moved between LibTorch versions (ProcessGroup::Work became c10d::Work in
// 1.13; 2.x adds Backend beneath ProcessGroup), so a build against another LibTorch
// changes this header only. Built and tested against Debian's LibTorch 1.13.1 with
// Gloo (libgloo-dev); NCCL is not used yet. Include it (or ranks.h) from the rank
// workloads only: it pulls in the c10d and Gloo headers (seconds of compile time each).
#pragma once

#ifndef USE_C10D_GLOO
#error "c10d_compat.h needs USE_C10D_GLOO: link the worker through Torch's CMake targets"
#endif

#include <chrono>
#include <cstdint>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace benchfleet::worker::c10d_compat {

using ProcessGroupPtr = c10::intrusive_ptr<::c10d::ProcessGroupGloo>;
using StorePtr = c10::intrusive_ptr<::c10d::Store>;

// Rank 0 hosts the store on `port` (every interface) and waits for the other ranks
// to connect; the others connect to host:port. Either throws past `timeout`.
inline StorePtr OpenTcpStore(const std::string& host, std::uint16_t port, bool host_it,
                             std::int64_t world_size, std::chrono::milliseconds timeout) {
  ::c10d::TCPStoreOptions options;  // the positional constructor is deprecated
  options.port = port;
  options.isServer = host_it;
  options.numWorkers = static_cast<std::size_t>(world_size);
  options.waitWorkers = true;
  options.timeout = timeout;
  return c10::make_intrusive<::c10d::TCPStore>(host, options);
}

// A Gloo group whose connections use `address`: Gloo's default device binds to
// whatever the hostname resolves to, which is 127.0.0.1 on hosts whose /etc/hosts says
// so, and a cross-host job then fails. `timeout` bounds the rendezvous and each call
// (c10d's own default is 30 minutes).
inline ProcessGroupPtr OpenGlooGroup(const StorePtr& store, std::int64_t rank,
                                     std::int64_t world_size, const std::string& address,
                                     std::chrono::milliseconds timeout) {
  auto options = ::c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(::c10d::ProcessGroupGloo::createDeviceForHostname(address));
  return c10::make_intrusive<::c10d::ProcessGroupGloo>(store, static_cast<int>(rank),
                                                       static_cast<int>(world_size), options);
}

// The collectives, each waited for: it returns once this rank's part is done.
inline void AllReduceSum(const ProcessGroupPtr& group, at::Tensor& tensor) {
  std::vector<at::Tensor> tensors{tensor};
  group->allreduce(tensors)->wait();
}

// Started, not waited for: a data-parallel bucket all-reduced while backward goes on.
using PendingWork = c10::intrusive_ptr<::c10d::Work>;
inline PendingWork StartAllReduceSum(const ProcessGroupPtr& group, at::Tensor& tensor) {
  std::vector<at::Tensor> tensors{tensor};
  return group->allreduce(tensors);
}

inline void Broadcast(const ProcessGroupPtr& group, at::Tensor& tensor, std::int64_t root) {
  std::vector<at::Tensor> tensors{tensor};
  ::c10d::BroadcastOptions options;
  options.rootRank = static_cast<int>(root);
  group->broadcast(tensors, options)->wait();
}

inline void AllGather(const ProcessGroupPtr& group, std::vector<at::Tensor>& outputs,
                      at::Tensor& input) {
  std::vector<std::vector<at::Tensor>> output_lists{outputs};
  std::vector<at::Tensor> inputs{input};
  group->allgather(output_lists, inputs)->wait();
  outputs = output_lists[0];
}

// Point to point, for the stages of a pipeline: a send completes when `Wait` says so
// (the tensor must stay untouched until then); a receive returns with the tensor filled.
using PendingSend = c10::intrusive_ptr<::c10d::Work>;

inline PendingSend Send(const ProcessGroupPtr& group, at::Tensor& tensor, std::int64_t to,
                        int tag) {
  std::vector<at::Tensor> tensors{tensor};
  return group->send(tensors, static_cast<int>(to), tag);
}

inline void Wait(const PendingSend& send) { send->wait(); }

inline void Receive(const ProcessGroupPtr& group, at::Tensor& tensor, std::int64_t from, int tag) {
  std::vector<at::Tensor> tensors{tensor};
  group->recv(tensors, static_cast<int>(from), tag)->wait();
}

}  // namespace benchfleet::worker::c10d_compat
