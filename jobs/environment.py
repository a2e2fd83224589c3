"""A job's set-up: wheels a host lacks installed into a target folder (put on the steps' PYTHONPATH),
and the environment check (Python, torch and its CUDA, the visible devices, the suite's packages),
written to `environment.json` and `gpu.csv` and kept as the summary's facts.

A host without an NVIDIA driver never installs torch, Triton or NVIDIA's CUDA libraries from a
wheel folder: those wheels are CUDA builds, and a CPU machine keeps the torch it has.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from jobs.session import Session

CUDA_WHEELS = ("torch-", "triton-", "nvidia_", "nvidia-")  # file name prefixes of CUDA builds
PROBE = """
import json, platform, sys
facts = {"python": platform.python_version()}
try:
    import torch
    facts["torch"] = torch.__version__
    facts["cuda"] = torch.version.cuda or "none"
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    facts["devices"] = ", ".join(torch.cuda.get_device_name(i) for i in range(count)) or "none"
except Exception as e:
    facts["torch"] = f"not importable: {e}"
from importlib import metadata
for name in ("hypothesis", "pytest", "xgrammar", "triton"):
    try:
        facts[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        facts[name] = "missing"
print(json.dumps(facts))
"""


def nvidia_host() -> bool:
    """Whether this host has an NVIDIA driver (its `nvidia-smi`)."""
    return shutil.which("nvidia-smi") is not None


def wheels_to_install(folder: Path, cuda_host: bool) -> tuple[list[Path], list[Path]]:
    """The wheels of `folder` to install, and those left out: CUDA builds on a host without a driver."""
    wheels = sorted(folder.glob("*.whl"))
    left_out = [w for w in wheels if not cuda_host and w.name.lower().startswith(CUDA_WHEELS)]
    return [w for w in wheels if w not in left_out], left_out


def install_wheels(s: Session, folder: Path, site: Path) -> bool:
    """Install the wheels of `folder` into `site` (no index, no dependencies) as step `wheels`; the
    facts say what was installed and left out. False when the install failed."""
    wheels, left_out = wheels_to_install(folder, nvidia_host())
    if left_out:
        s.facts["wheels left out (CUDA builds, no NVIDIA driver here)"] = ", ".join(w.name for w in left_out)
    if not wheels:
        s.facts["wheels"] = f"none to install from {folder}"
        return True
    site.mkdir(parents=True, exist_ok=True)
    pip = ["-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir", "--upgrade"]
    step = s.run("wheels", s.py(*pip, "--target", site, *wheels), limit_s=120)
    step.outcome = step.outcome or f"{len(wheels)} wheels into {site}"
    s.facts["wheels"] = f"{len(wheels)} from {folder} into {site} ({step.status})"
    return step.status in ("ok", "planned")


def check_environment(s: Session) -> dict[str, str]:
    """Record and return the facts of the steps' Python (`PROBE`), and the GPUs' `nvidia-smi` query."""
    done = subprocess.run(s.py("-c", PROBE), env=s.env, capture_output=True, text=True, timeout=120)
    try:
        facts = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        facts = {"python": f"the environment check failed: {done.stderr.strip()[-300:]}"}
    s.path("environment.json").write_text(json.dumps(facts, indent=1) + "\n")
    if nvidia_host():
        query = ["nvidia-smi", "--query-gpu=name,memory.total,driver_version,clocks.sm", "--format=csv"]
        smi = subprocess.run(query, capture_output=True, text=True, timeout=60)
        s.path("gpu.csv").write_text(smi.stdout + smi.stderr)
    s.facts.update({k: str(v) for k, v in facts.items()})
    return facts


def needs_cuda(device: str) -> bool:
    return device.startswith("cuda")
