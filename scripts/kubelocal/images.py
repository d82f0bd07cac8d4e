"""Images in the cluster's containerd, as nothing can be pulled: the pod sandbox image,
made here from the pause program (a Docker image archive of one layer, written directly),
and images Docker holds (``docker save``), each imported with ``ctr images import``."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

from scripts.kubelocal.configs import SOCKET
from scripts.kubelocal.layout import BIN, DATA, NAMESPACE, PAUSE_IMAGE


def ctr(*args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["ctr", "--address", str(SOCKET), "--namespace", NAMESPACE, *args],
                          input=stdin, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ctr {' '.join(args[:2])} failed: "
                           f"{done.stderr.decode(errors='replace').strip()[-500:]}")
    return done.stdout.decode()


def held() -> set[str]:
    """The names of the images containerd holds."""
    return {line.split()[0] for line in ctr("images", "ls").splitlines()[1:] if line.strip()}


def archive(name: str, files: dict[str, tuple[bytes, int]], entrypoint: Sequence[str]) -> bytes:
    """A ``docker save`` archive of one image: one layer of ``files`` (path → bytes, mode)."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        for path, (data, mode) in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    layer_bytes = layer.getvalue()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": list(entrypoint)},
        "rootfs": {"type": "layers",
                   "diff_ids": [f"sha256:{hashlib.sha256(layer_bytes).hexdigest()}"]}}).encode()
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [name],
                            "Layers": ["layer/layer.tar"]}]).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, data in ((config_name, config), ("layer/layer.tar", layer_bytes),
                           ("manifest.json", manifest)):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def pause() -> None:
    if PAUSE_IMAGE in held():
        return
    program = (BIN / "pause").read_bytes()
    ctr("images", "import", "-", stdin=archive(PAUSE_IMAGE, {"pause": (program, 0o755)},
                                               ["/pause"]))


def from_docker(names: Sequence[str]) -> None:
    """Import the images Docker holds under ``names`` that containerd lacks."""
    have = held()
    for name in names:
        if name in have or f"docker.io/library/{name}" in have:
            continue
        saved = DATA / "image.tar"
        subprocess.run(["docker", "save", "-o", str(saved), name], check=True,
                       capture_output=True)
        try:
            ctr("images", "import", str(saved))
        finally:
            Path(saved).unlink(missing_ok=True)
