# SPDX-License-Identifier: Apache-2.0
"""Where a pass ran: the machine block and the software and settings of the env block."""
import os
import platform
import sys


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def cpu_model():
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def cpu_flags():
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            wanted = ["avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16",
                      "amx_int8", "amx_tile"]
            return [f for f in wanted if f in flags]
    return []


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def os_name():
    pretty = ""
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            pretty = line.split("=", 1)[1].strip().strip('"')
    return f"{pretty or platform.system()}, Linux {platform.release()}"


def load_average():
    text = _read("/proc/loadavg").split()
    return [float(v) for v in text[:3]] if text else []


def blas_library():
    """The BLAS that libblas.so.3 resolves to on Debian (the reference BLAS is ~20x slower)."""
    for alt in ("/etc/alternatives/libblas.so.3-x86_64-linux-gnu",
                "/etc/alternatives/libblas.so.3-aarch64-linux-gnu"):
        if os.path.lexists(alt):
            return os.path.realpath(alt)
    return ""


def machine_block(torch, device, name, note):
    block = {"name": name, "cpu": cpu_model(), "cores": usable_cores(), "os": os_name()}
    if device.startswith("cuda"):
        block["gpu"] = torch.cuda.get_device_name(torch.device(device))
    if note:
        block["note"] = note
    return block


def env_block(torch, device):
    env = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "cpu_flags": cpu_flags(),
        "torch_default_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "load_average_start": load_average(),
    }
    blas = blas_library()
    if blas:
        env["blas"] = blas
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if os.environ.get(var):
            env[var] = os.environ[var]
    if device.startswith("cuda"):
        dev = torch.device(device)
        props = torch.cuda.get_device_properties(dev)
        env.update({
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "gpu": props.name,
            "sm_count": props.multi_processor_count,
            "gpu_memory_bytes": props.total_memory,
            "capability": f"{props.major}.{props.minor}",
            # Defaults before the pass; each run sets both flags from its precision.
            "cudnn_allow_tf32_default": bool(torch.backends.cudnn.allow_tf32),
            "matmul_allow_tf32_default": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        })
        driver = _read("/proc/driver/nvidia/version").splitlines()
        if driver:
            env["driver"] = driver[0].strip()
    return env
