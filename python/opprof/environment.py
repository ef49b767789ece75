"""What a capture records about the machine it ran on: versions, the device, its SM clock.

Everything here is best effort: a missing package or an NVML failure leaves a field null and never
fails a capture.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any


def _package_version(name: str) -> str | None:
    try:
        from importlib import metadata

        return metadata.version(name)
    except Exception:
        return None


def versions() -> dict[str, Any]:
    import opprof

    out: dict[str, Any] = {
        "opprof": opprof.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": None,
        "cuda": None,
        "cudnn": None,
        "triton": _package_version("triton") or _package_version("pytorch-triton"),
        "transformers": _package_version("transformers"),
        "nvidia_ml_py": _package_version("nvidia-ml-py") or _package_version("pynvml"),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch"] = torch.__version__
        out["cuda"] = getattr(torch.version, "cuda", None)
        try:
            out["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        except Exception:
            out["cudnn"] = None
    return out


def _nvml() -> Any:
    import pynvml  # nvidia-ml-py

    pynvml.nvmlInit()
    return pynvml


def _nvml_handle(pynvml: Any, device_index: int) -> Any:
    """The NVML handle of a CUDA device. NVML numbers all GPUs, CUDA only the visible ones, so go by PCI
    bus id when torch tells it; else map through CUDA_VISIBLE_DEVICES when that is a list of numbers."""
    import torch

    props = torch.cuda.get_device_properties(device_index)
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        domain = getattr(props, "pci_domain_id", 0) or 0
        device = getattr(props, "pci_device_id", 0) or 0
        try:
            return pynvml.nvmlDeviceGetHandleByPciBusId(f"{domain:08X}:{bus:02X}:{device:02X}.0".encode())
        except Exception:
            pass
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    index = device_index
    if visible:
        entries = [v.strip() for v in visible.split(",") if v.strip()]
        if device_index < len(entries) and entries[device_index].isdigit():
            index = int(entries[device_index])
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def device_info(device: str) -> dict[str, Any]:
    info: dict[str, Any] = {"type": device}
    if device != "cuda":
        info["name"] = platform.processor() or platform.machine()
        return info
    import torch

    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    major, minor = props.major, props.minor
    from opprof.engine import EngineNotFound
    from opprof.metricset import chip_for_device

    try:
        chip = chip_for_device(props.name, major, minor)
    except EngineNotFound as exc:  # a capture run by hand without the engine: the chip is the engine's word
        chip, info["chip_error"] = "", str(exc)
    info.update(
        {
            "index": index,
            "name": props.name,
            "compute_capability": f"{major}.{minor}",
            "chip": chip,
            "sm_count": props.multi_processor_count,
            "total_memory_bytes": props.total_memory,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "driver": None,
            "max_sm_clock_mhz": None,
            "max_memory_clock_mhz": None,
        }
    )
    try:
        pynvml = _nvml()
        handle = _nvml_handle(pynvml, index)
        driver = pynvml.nvmlSystemGetDriverVersion()
        info["driver"] = driver.decode() if isinstance(driver, bytes) else driver
        info["max_sm_clock_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
        info["max_memory_clock_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
    except Exception as exc:
        info["nvml_error"] = repr(exc)
    return info


def sm_clock_mhz(device: str) -> dict[str, Any] | None:
    """The SM clock NVML reports now (its last sample period), with the source that gave it."""
    if device != "cuda":
        return None
    import torch

    index = torch.cuda.current_device()
    try:
        return {"mhz": int(torch.cuda.clock_rate(index)), "source": "torch.cuda.clock_rate"}
    except Exception:
        pass
    try:
        pynvml = _nvml()
        handle = _nvml_handle(pynvml, index)
        return {"mhz": int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)), "source": "pynvml"}
    except Exception as exc:
        return {"mhz": None, "source": None, "error": repr(exc)}
