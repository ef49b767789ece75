// libopprof_torch_observer.so: PyTorch operator ranges as NVTX ranges, at a fraction of emit_nvtx's cost.
//
// torch.autograd.profiler.emit_nvtx formats "<op>, seq = N, op_id = M, ..." with a stringstream for every
// operator; with the opprof tracer injected that string building, not the NVTX call, is most of its cost.
// This observer registers one global RecordFunction callback that pushes the operator's own name (a
// pointer into the schema, no formatting) into the NVTX domain "opprof.torch", with the RecordFunction
// scope + 1 as the NVTX category and autograd's sequence number / forward thread in the payload
// (tracer_log/format.hpp: encode_autograd_link), and pops it when the operator ends. Whatever NVTX injection is loaded
// (the opprof tracer, Nsight Systems) records the ranges.
//
// Collectives get a communication mark (OPPROF_COMM_ARGS_MARK) inside their range: the input tensors of
// gloo:* / nccl:* ranges (a second callback, for the user scope only, reads RecordFunction's inputs) and
// record_param_comms's process group, collective and message size (from the thread's debug info).
//
// Built against one torch's headers: the C++ ABI of RecordFunction is not stable across releases, so the
// Python side loads it only into the torch version it was built for (opprof_torch_observer_built_for).
// Loaded with ctypes after `import torch`: libc10 and libtorch_cpu are then already mapped.
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <nvtx3/nvToolsExt.h>
#if __has_include(<torch/csrc/distributed/c10d/ParamCommsUtils.hpp>)
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>
#define OPPROF_HAVE_PARAM_COMMS 1
#endif

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "contract/opprof_contract.h"
#include "tracer_log/format.hpp"

#ifndef OPPROF_TORCH_VERSION
#error "OPPROF_TORCH_VERSION (the torch.__version__ built against) must be defined"
#endif

namespace {

constexpr const char* kDomainName = OPPROF_NVTX_DOMAIN_TORCH;

// NVTX category of a range: RecordScope + 1 (0 is NVTX's "no category").
constexpr const char* kScopeNames[] = {
    "function",       "backward_function", "torchscript_function", "kernel_function_dtype",
    "custom_class",   "build_feature",     "lite_interpreter",     "user_scope",
    "static_runtime_op", "static_runtime_model"};
static_assert(sizeof(kScopeNames) / sizeof(kScopeNames[0]) == static_cast<std::size_t>(at::RecordScope::NUM_SCOPES));

std::mutex g_mutex;
nvtxDomainHandle_t g_domain = nullptr;
bool g_enabled = false;
at::CallbackHandle g_handle = 0;
at::CallbackHandle g_user_scope_handle = 0;  // 0: not registered

// A communication mark (OPPROF_COMM_ARGS_MARK) in the domain, right after the range it describes was
// pushed. Formatting costs only here: collectives are few.
void mark_communication(const std::string& json) {
  const std::string text = OPPROF_COMM_ARGS_MARK + json;
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = text.c_str();
  nvtxDomainMarkEx(g_domain, &attributes);
}

// JSON string of a name torch gives (dtype and process-group names: no quotes or control characters
// expected, escaped all the same).
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + '"';
}

// record_param_comms (ProcessGroupNCCL's, and any backend's that records it): its arguments are the
// thread's PARAM_COMMS_INFO debug info, readable without RecordFunction's inputs.
void mark_param_comms() {
#ifdef OPPROF_HAVE_PARAM_COMMS
  const auto* info =
      static_cast<const torch::ParamCommsDebugInfo*>(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PARAM_COMMS_INFO));
  if (info == nullptr) return;
  const std::string dtype = c10::toString(info->getDType());
  const std::int64_t elements = info->getInMessageNelems();
  const std::int64_t bytes = elements >= 0 ? elements * static_cast<std::int64_t>(c10::elementSize(info->getDType())) : -1;
  mark_communication("{\"elements\": " + std::to_string(elements) + ", \"bytes\": " + std::to_string(bytes) +
                     ", \"dtype\": " + json_string(dtype) + ", \"collective\": " + json_string(info->getCollectiveName()) +
                     ", \"process_group\": " + json_string(info->getProcessGroupName()) +
                     ", \"process_group_desc\": " + json_string(info->getProcessGroupDesc()) +
                     ", \"group_size\": " + std::to_string(info->getWorldSize()) + "}");
#endif
}

bool is_record_param_comms(const char* name) {
  return name != nullptr && name[0] == 'r' && std::strcmp(name, "record_param_comms") == 0;
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.category = static_cast<std::uint32_t>(fn.scope()) + 1;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = fn.name();
  // Autograd's link: a forward operator's sequence number, and on a backward node the same number with
  // its forward thread's id (what torch.profiler writes as "Sequence number" / "Fwd thread id").
  if (const std::uint32_t link = opprof::tracelog::encode_autograd_link(fn.seqNr(), fn.forwardThreadId()); link != 0) {
    attributes.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
    attributes.payload.uiValue = link;
  }
  nvtxDomainRangePushEx(g_domain, &attributes);
  if (is_record_param_comms(fn.name())) mark_param_comms();
  return nullptr;
}

// The second callback, for user-scope ranges only (so that only they pay for RecordFunction's inputs):
// ProcessGroup work titles (gloo:all_reduce, nccl:all_reduce) carry the collective's tensors. Runs after
// on_enter (callbacks run in the order they were added), inside the range on_enter pushed.
std::unique_ptr<at::ObserverContext> on_enter_user_scope(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (name == nullptr || (std::strncmp(name, "gloo:", 5) != 0 && std::strncmp(name, "nccl:", 5) != 0)) return nullptr;
  std::int64_t elements = 0, bytes = 0;
  std::string dtype;
  auto add = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    elements += t.numel();
    bytes += t.numel() * static_cast<std::int64_t>(t.element_size());
    const std::string d = c10::toString(t.scalar_type());
    dtype = dtype.empty() || dtype == d ? d : "mixed";
  };
  for (const c10::IValue& v : fn.inputs()) {
    if (v.isTensor()) {
      add(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) add(t);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor()) add(e.toTensor());
    }
  }
  mark_communication("{\"elements\": " + std::to_string(elements) + ", \"bytes\": " + std::to_string(bytes) +
                     ", \"dtype\": " + json_string(dtype) + "}");
  return nullptr;
}
void on_exit_user_scope(const at::RecordFunction&, at::ObserverContext*) {}

void on_exit(const at::RecordFunction&, at::ObserverContext*) { nvtxDomainRangePop(g_domain); }

// The empty callback: what RecordFunction itself costs per operator, whoever observes it. Overhead
// breakdowns measure it (scripts/overhead_gpt2.py --breakdown), because no operator observer can be cheaper.
std::unique_ptr<at::ObserverContext> on_enter_empty(const at::RecordFunction&) { return nullptr; }
void on_exit_empty(const at::RecordFunction&, at::ObserverContext*) {}

int enable(bool empty) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_enabled) return 1;
  try {
    if (g_domain == nullptr) {
      g_domain = nvtxDomainCreateA(kDomainName);
      for (std::size_t i = 0; i < sizeof(kScopeNames) / sizeof(kScopeNames[0]); ++i)
        nvtxDomainNameCategoryA(g_domain, static_cast<std::uint32_t>(i + 1), kScopeNames[i]);
    }
    // No inputs, outputs or ids: the callback reads only the name and the scope, so RecordFunction
    // skips copying the inputs.
    auto callback = empty ? at::RecordFunctionCallback(on_enter_empty, on_exit_empty)
                          : at::RecordFunctionCallback(on_enter, on_exit);
    g_handle = at::addGlobalCallback(callback.needsInputs(false).needsOutputs(false).needsIds(false));
    if (!empty)
      g_user_scope_handle = at::addGlobalCallback(at::RecordFunctionCallback(on_enter_user_scope, on_exit_user_scope)
                                                      .needsInputs(true)
                                                      .needsOutputs(false)
                                                      .needsIds(false)
                                                      .scopes({at::RecordScope::USER_SCOPE}));
    g_enabled = true;
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opprof torch observer: could not register the RecordFunction callback: %s\n", e.what());
    return -1;
  }
}

}  // namespace

extern "C" {

// The torch.__version__ this library was compiled against.
__attribute__((visibility("default"))) const char* opprof_torch_observer_built_for() { return OPPROF_TORCH_VERSION; }

// Starts recording operator ranges on every thread; 0 on success, 1 if already on, -1 on failure (a
// message goes to stderr: never throw across the C boundary).
__attribute__((visibility("default"))) int opprof_torch_observer_enable() { return enable(false); }

// Registers the empty callback instead (no ranges): RecordFunction's own cost, for overhead breakdowns.
// Same answers as opprof_torch_observer_enable; opprof_torch_observer_disable removes it.
__attribute__((visibility("default"))) int opprof_torch_observer_enable_empty() { return enable(true); }

// Stops recording. Operators already running still close their ranges (RecordFunction keeps the
// callbacks it started with).
__attribute__((visibility("default"))) void opprof_torch_observer_disable() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_enabled) return;
  at::removeCallback(g_handle);
  if (g_user_scope_handle != 0) at::removeCallback(g_user_scope_handle);
  g_user_scope_handle = 0;
  g_enabled = false;
}

}  // extern "C"
