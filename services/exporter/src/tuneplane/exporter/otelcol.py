"""The composed OpenTelemetry Collector: its configuration file, and its process when the
exporter runs it (``--otelcol``). A changed configuration restarts it (a renamed sink
means a new exporter, authenticator and credential directory); no configuration stops it
and removes the file. The collector runs with a clean environment: none of the platform's
secrets or store settings, only ``PASSED`` (time zone, CA bundle, proxies)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger("tuneplane.exporter")

#: What of the exporter's environment the collector is given; nothing else.
PASSED = ("TZ", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
          "http_proxy", "https_proxy", "no_proxy")


def collector_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The collector's whole environment, taken from the exporter's ``environ``."""
    return {name: environ[name] for name in PASSED if name in environ}


def with_parent(command: list[str]) -> list[str]:
    """The command, made to get SIGTERM when the exporter dies however it dies (util-linux
    setpriv --pdeathsig), so a killed exporter never leaves a collector holding the
    receiver's port. Not a preexec_fn: Python code between fork and exec is unsafe beside
    gRPC's threads."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *command] if setpriv else command


class ComposedCollector:
    def __init__(self, config_path: Path, binary: Path | None, log_path: Path,
                 environ: Mapping[str, str]) -> None:
        self.config_path = config_path
        self._binary = binary
        self._log_path = log_path
        self._environment = collector_environment(environ)
        self._text: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def text(self) -> str | None:
        return self._text

    @property
    def pid(self) -> int | None:
        """The collector's process id while the exporter runs it."""
        return None if self._process is None else self._process.pid

    def apply(self, text: str | None) -> None:
        """Make the collector run on ``text`` (None: nothing); restart only on a change, or
        when the process died."""
        if text == self._text:
            if text is not None and self._process is not None and \
                    self._process.poll() is not None:
                log.warning("composed collector exited %s; starting it again",
                            self._process.returncode)
                self._start()
            return
        self.stop()
        self._text = text
        if text is None:
            self.config_path.unlink(missing_ok=True)
            log.info("no destination: composed collector stopped, configuration removed")
            return
        self._write(text)
        self._start()

    def _write(self, text: str) -> None:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.config_path.parent, prefix=".otelcol-")
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, self.config_path)

    def _start(self) -> None:
        if self._binary is None:
            log.info("composed configuration written to %s (the collector is run by the "
                     "deployment)", self.config_path)
            return
        with self._log_path.open("ab") as out:
            self._process = subprocess.Popen(
                with_parent([str(self._binary), f"--config={self.config_path}"]), stdout=out,
                stderr=subprocess.STDOUT, env=self._environment)
        self.starts += 1
        log.info("composed collector started (pid %d) on %s", self._process.pid,
                 self.config_path)

    def stop(self) -> None:
        if self._process is None or self._process.poll() is not None:
            self._process = None
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None
