"""deploy/container/Dockerfile, built and run as a user would: podman builds the CPU image from a
Debian 12 base made here with mmdebstrap (no registry can be reached: Debian's own packages are
the base), the container serves the default model from a read-only volume, and the official
`openai` SDK gets an answer from it. Also checks what the runtime stage promises: a non-root
user, no compiler, every shared library the binary needs present.

Label `slow` (scripts/test_slow.sh): the image's build compiles lumen in the container (minutes
with a warm ccache mounted from the host, much longer without). Needs root, podman and
mmdebstrap (scripts/setup_container.sh installs them); without them it is skipped."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest

# The HTTP client the openai SDK is built on (renamed httpx2 in its newer releases).
try:
    import httpx2 as httpx
except ImportError:
    import httpx

REPO = Path(__file__).resolve().parents[2]
BASE = "localhost/lumen-base:bookworm"
DEBIAN_SUITES = ["debian bookworm", "debian bookworm-updates", "debian-security bookworm-security"]
IMAGE = "localhost/lumen:test"
MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def run(*args, check=True, timeout=3600, **kw):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kw)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result


@dataclass
class Podman:
    options: list  # before the command: podman OPTIONS run ...
    limits: list  # after it: podman run LIMITS ...


@pytest.fixture(scope="module")
def podman():
    if os.geteuid() != 0 or not shutil.which("podman") or not shutil.which("mmdebstrap"):
        pytest.skip("needs root, podman and mmdebstrap (scripts/setup_container.sh)")
    make_base()
    if run("podman", "run", "--rm", BASE, "true", check=False, timeout=120).returncode == 0:
        return Podman([], [])
    # What this kind of host needs: crun refuses cgroup v1 + v2 hybrids (runc runs there), and
    # raising RLIMIT_NOFILE/NPROC to podman's defaults needs CAP_SYS_RESOURCE, so the container
    # keeps limits below the host's.
    p = Podman(["--runtime", "runc"], ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"])
    probe = run("podman", *p.options, "run", "--rm", *p.limits, BASE, "true", check=False, timeout=120)
    assert probe.returncode == 0, f"podman cannot run a container here:\n{probe.stderr}"
    return p


def make_base():
    """A slim Debian 12 image from Debian's packages, made once per host: mmdebstrap's minbase
    with today's security and point-release updates (so its headers are the host's, whose
    ccache's objects hash them) and no documentation, man pages or translations."""
    if run("podman", "image", "exists", BASE, check=False).returncode == 0:
        return
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        excludes = [f"--dpkgopt=path-exclude=/usr/share/{d}/*" for d in ("doc", "man", "locale")]
        sources = [f"deb http://deb.debian.org/{suite} main" for suite in DEBIAN_SUITES]
        run("mmdebstrap", "--variant=minbase", *excludes, "bookworm", f"{tmp}/rootfs.tar", *sources)
        run("podman", "import", f"{tmp}/rootfs.tar", BASE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def image(podman):
    glob, limits = podman.options, podman.limits
    ccache = Path(os.environ.get("CCACHE_DIR") or Path.home() / ".cache" / "ccache")
    volumes = ["-v", f"{ccache}:/ccache"] if ccache.is_dir() else []
    start = time.monotonic()
    run("podman", *glob, "build", *limits, "--network", "host", *volumes, "--build-arg", f"BASE={BASE}",
        "-f", REPO / "deploy/container/Dockerfile", "-t", IMAGE, REPO)
    inspect = json.loads(run("podman", "image", "inspect", IMAGE).stdout)[0]
    print(f"image built in {time.monotonic() - start:.0f} s, {inspect['Size'] / 1e6:.0f} MB")
    return inspect


def test_runtime_stage_is_slim_and_unprivileged(podman, image):
    glob, limits = podman.options, podman.limits
    config = image["Config"]
    assert config["Entrypoint"][:2] == ["lumen", "serve"]
    assert config["User"] == "lumen" and "/models" in config["Volumes"]
    shell = ["podman", *glob, "run", "--rm", *limits, "--entrypoint", "sh", IMAGE, "-c"]
    assert run(*shell, "id -u").stdout.strip() == "10001"
    libs = run(*shell, "ldd /usr/local/bin/lumen").stdout
    assert "not found" not in libs, libs
    # The build stage's tools stayed there.
    assert run(*shell, "command -v c++ cmake ninja", check=False).stdout.strip() == ""
    # A slim base (about 125 MB) plus the libraries lumen links (about 100 MB): no build tools.
    assert image["Size"] < 300e6, image["Size"]


def test_the_container_serves_the_model_to_the_openai_sdk(podman, image):
    glob, limits = podman.options, podman.limits
    models = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
    assert (models / MODEL).exists(), f"{models / MODEL} is missing: run scripts/fetch_models.py"
    port = free_port()
    name = f"lumen-test-{port}"
    run("podman", *glob, "run", "-d", "--rm", *limits, "--name", name, "-p", f"127.0.0.1:{port}:8080",
        "-v", f"{models}:/models:ro", IMAGE, f"--model=/models/{MODEL}", "--threads=2")
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, run("podman", *glob, "logs", name, check=False).stderr
            time.sleep(0.5)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none")
        reply = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", temperature=0, max_tokens=8,
                                               messages=[{"role": "user", "content": "What is the capital of France?"}])
        assert reply.choices[0].message.content.strip(), reply
        assert reply.usage.completion_tokens > 0
        print("container answered:", reply.choices[0].message.content)
    finally:
        run("podman", *glob, "stop", "-t", "5", name, check=False)
