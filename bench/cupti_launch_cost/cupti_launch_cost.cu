// CPU cost per kernel launch of the CUPTI features the opprof tracer uses, one configuration per process
// (a micro-benchmark for a GPU machine; see docs/tracer.md, "Overhead design").
//
//   build-gpu/bench/cupti_launch_cost/cupti_launch_cost [FEATURE,...]      (no argument: nothing enabled)
//
// Features, comma-separated:
//   kernel        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL records (the tracer's kernel timeline)
//   api_activity  CUPTI's API activity records for the launch calls only (cuptiActivityEnableRuntimeApi/DriverApi)
//   callbacks     CUPTI callbacks on the launch calls of the runtime and the driver, doing nothing
//   runtime_only  with callbacks: the runtime's launch calls only (no nested driver callbacks)
//   timestamps    with callbacks: two cuptiGetTimestamp() reads per outermost launch (the tracer's API record)
// Each of 12 rounds (the first 2 discarded) launches an empty kernel 20,000 times, synchronizing every 200
// launches outside the timed calls so the launch queue never fills; printed: the median over rounds of the
// mean time of one launch call.
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

__global__ void empty_kernel() {}

bool g_timestamps = false;
thread_local int t_depth = 0;
thread_local std::uint64_t t_start = 0;
std::uint64_t g_sink = 0;  // keeps the timestamp reads from being optimized away

bool is_launch(const char* name, bool runtime) {
  static const char* const kRuntime[] = {"cudaLaunch", "__cudaLaunch", nullptr};
  static const char* const kDriver[] = {"cuLaunch", nullptr};
  for (const char* const* p = runtime ? kRuntime : kDriver; *p != nullptr; ++p)
    if (std::strncmp(name, *p, std::strlen(*p)) == 0) return true;
  return false;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  if (!g_timestamps) return;
  const auto* api = static_cast<const CUpti_CallbackData*>(data);
  if (api->callbackSite == CUPTI_API_ENTER) {
    if (t_depth++ == 0) cuptiGetTimestamp(&t_start);
  } else if (--t_depth == 0) {
    std::uint64_t end = 0;
    cuptiGetTimestamp(&end);
    g_sink += end - t_start + api->correlationId;
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *size = 8u << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t) {
  std::free(buffer);
}

// Calls fn(domain, cbid) for every launch call of the runtime (and the driver unless runtime_only).
template <typename Fn>
void for_each_launch_call(bool runtime_only, Fn fn) {
  for (const CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (!runtime && runtime_only) break;
    const std::uint32_t count = runtime ? static_cast<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                        : static_cast<std::uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
    for (std::uint32_t cbid = 1; cbid < count; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name != nullptr && is_launch(name, runtime))
        fn(domain, cbid);
    }
  }
}

bool check(CUptiResult rc, const char* what) {
  if (rc == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  std::fprintf(stderr, "cupti_launch_cost: %s failed: %s\n", what, text != nullptr ? text : "?");
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string features = argc > 1 ? argv[1] : "";
  auto has = [&](const char* f) { return ("," + features + ",").find("," + std::string(f) + ",") != std::string::npos; };
  for (std::size_t begin = 0; begin < features.size();) {
    const std::size_t end = std::min(features.find(',', begin), features.size());
    const std::string feature = features.substr(begin, end - begin);
    bool known = false;
    for (const char* k : {"kernel", "api_activity", "callbacks", "runtime_only", "timestamps"}) known |= feature == k;
    if (!known) {
      std::fprintf(stderr, "cupti_launch_cost: unknown feature '%s' (kernel, api_activity, callbacks, runtime_only, "
                           "timestamps)\n", feature.c_str());
      return 2;
    }
    begin = end + 1;
  }
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "cupti_launch_cost: no CUDA device\n");
    return 2;
  }
  bool ok = check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  if (has("kernel")) ok &= check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable CONCURRENT_KERNEL");
  if (has("api_activity")) {
    for_each_launch_call(false, [&](CUpti_CallbackDomain domain, std::uint32_t cbid) {
      ok &= check(domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(cbid, 1)
                                                        : cuptiActivityEnableDriverApi(cbid, 1),
                  "enable API records");
    });
  }
  if (has("callbacks")) {
    g_timestamps = has("timestamps");
    CUpti_SubscriberHandle subscriber = nullptr;
    ok &= check(cuptiSubscribe(&subscriber, on_callback, nullptr), "cuptiSubscribe");
    for_each_launch_call(has("runtime_only"), [&](CUpti_CallbackDomain domain, std::uint32_t cbid) {
      ok &= check(cuptiEnableCallback(1, subscriber, domain, cbid), "cuptiEnableCallback");
    });
  }
  if (!ok) return 1;

  constexpr int kRounds = 12, kDiscarded = 2, kLaunches = 20000, kSyncEvery = 200;
  std::vector<double> per_launch_ns;
  for (int round = 0; round < kRounds; ++round) {
    double total_ns = 0;
    for (int i = 0; i < kLaunches; ++i) {
      if (i % kSyncEvery == 0) cudaDeviceSynchronize();
      const auto t0 = std::chrono::steady_clock::now();
      empty_kernel<<<1, 1>>>();
      const auto t1 = std::chrono::steady_clock::now();
      total_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    }
    if (round >= kDiscarded) per_launch_ns.push_back(total_ns / kLaunches);
  }
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::sort(per_launch_ns.begin(), per_launch_ns.end());
  std::printf("%-40s %6.0f ns per launch (median of %zu rounds, best %.0f)%s\n",
              features.empty() ? "none" : features.c_str(), per_launch_ns[per_launch_ns.size() / 2],
              per_launch_ns.size(), per_launch_ns.front(), g_sink == 1 ? " " : "");  // g_sink: used
  return 0;
}
