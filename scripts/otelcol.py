"""Build (once, cached) the OpenTelemetry Collector that TelemetryDestination tests run.

Standard library only. The builder comes from the Go module proxy (``go install
go.opentelemetry.io/collector/cmd/builder``), then builds ``scripts/otelcol-builder.yaml``
into ``~/.cache/tuneplane/otelcol/<version>-<manifest digest>/otelcol-tuneplane``.

    scripts/otelcol build     build if needed; print the binary's path
    scripts/otelcol path      print the path (exit 1 if not built)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from scripts.lib.processes import ProcessError, run

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "scripts" / "otelcol-builder.yaml"
VERSION = "v0.161.0"
CACHE = Path(os.environ.get("TUNEPLANE_CACHE_DIR", Path.home() / ".cache" / "tuneplane"))


def binary() -> Path:
    digest = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()[:12]
    return CACHE / "otelcol" / f"{VERSION}-{digest}" / "otelcol-tuneplane"


def build() -> Path:
    target = binary()
    if target.exists():
        return target
    if shutil.which("go") is None:
        raise SystemExit("otelcol: Go is needed to build the OpenTelemetry Collector")
    tools = CACHE / "otelcol" / "bin"
    builder = tools / "builder"
    if not builder.exists():
        print(f"otelcol: installing the builder {VERSION} from the Go module proxy",
              file=sys.stderr)
        run("otelcol", ["go", "install", f"go.opentelemetry.io/collector/cmd/builder@{VERSION}"],
            env={**os.environ, "GOBIN": str(tools)})
    print(f"otelcol: building {target} (a minute or two the first time)", file=sys.stderr)
    work = target.parent.with_name(target.parent.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    manifest = work / "builder.yaml"
    manifest.write_text(MANIFEST.read_text().replace("OUTPUT_PATH", str(work)))
    run("otelcol", [str(builder), f"--config={manifest}"])
    shutil.rmtree(target.parent, ignore_errors=True)
    work.rename(target.parent)
    return target


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else "build"
    if command == "build":
        try:
            print(build())
        except ProcessError as exc:
            print(exc, file=sys.stderr)
            return 1
    elif command == "path":
        if not binary().exists():
            print("otelcol: not built; run scripts/otelcol build", file=sys.stderr)
            return 1
        print(binary())
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
