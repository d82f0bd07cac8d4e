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

#: Docker's image id of each name imported from it.
IMPORTED = DATA / "images.json"


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


def reference(name: str) -> str:
    """``name`` as containerd lists it: Docker Hub's names in full (``python:3.11-slim`` is
    ``docker.io/library/python:3.11-slim``), others as they are."""
    first = name.split("/")[0]
    if "/" in name and ("." in first or ":" in first or first == "localhost"):
        return name
    return f"docker.io/{name}" if "/" in name else f"docker.io/library/{name}"


def docker_ids(names: Sequence[str]) -> dict[str, str]:
    done = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", *names],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"docker image inspect: {done.stderr.strip()[-500:]}")
    return dict(zip(names, done.stdout.split(), strict=True))


def from_docker(names: Sequence[str]) -> None:
    """Import the images Docker holds under ``names`` that containerd lacks, or holds as
    another image than Docker's now (a stand-in rebuilt under its name: the ids imported
    are kept in ``.kube-local/images.json``), in one archive: layers the images share are
    written once."""
    have = held()
    ids = docker_ids(names)
    known = json.loads(IMPORTED.read_text()) if IMPORTED.exists() else {}
    missing = [name for name in names if known.get(name) != ids[name]
               or (reference(name) not in have and name not in have)]
    if not missing:
        return
    saved = DATA / "images.tar"
    try:
        done = subprocess.run(["docker", "save", "-o", str(saved), *missing], check=False,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"docker save {' '.join(missing)}: {done.stderr.strip()[-500:]}")
        ctr("images", "import", str(saved))
    finally:
        Path(saved).unlink(missing_ok=True)
    IMPORTED.write_text(json.dumps({**known, **{name: ids[name] for name in missing}},
                                   indent=1))
