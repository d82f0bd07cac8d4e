"""Many concurrent callers of one URL, by ``wrk`` (Debian's package, installed when absent:
a C load generator, so the callers cost this machine little of the CPU the web process
needs): answers per second (2xx only) and latency percentiles (of every answer: refusals,
fast, are counted apart and said), and the answers that were not 2xx."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}
PERCENTILE = re.compile(r"^\s+(50|99)(?:\.000)?%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)


def wrk() -> str:
    """wrk's path, installing Debian's package first when it is not on the machine."""
    found = shutil.which("wrk")
    if found:
        return found
    print("installing Debian's wrk (the concurrent callers)")
    subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True,
                   stdout=subprocess.DEVNULL)
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit("wrk is not installed and could not be (apt-get install wrk, as root)")
    return found


@dataclass(frozen=True)
class Load:
    callers: int
    answers_per_second: float
    p50_ms: float
    p99_ms: float
    failed: int

    def line(self, label: str) -> str:
        return (f"{label:<12} {self.callers:>3} callers   p50 {self.p50_ms:7.1f} ms   "
                f"p99 {self.p99_ms:7.1f} ms   {self.answers_per_second:8.1f} answers/s"
                + (f"   {self.failed:,} answers not 2xx" if self.failed else ""))


def parse(output: str, callers: int) -> Load:
    """wrk's report (``--latency``)."""
    found = {int(p): float(v) * UNITS[unit] for p, v, unit in PERCENTILE.findall(output)}
    total = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)\b", output)
    refused = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(r"Socket errors:.*?(\d+).*?(\d+).*?(\d+).*?(\d+)", output)
    if total is None or 50 not in found or 99 not in found:
        raise ValueError(f"wrk said nothing to measure:\n{output}")
    failed = ((int(refused[1]) if refused else 0)
              + (sum(int(e) for e in errors.groups()) if errors else 0))
    seconds = float(total[2]) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[total[3]]
    return Load(callers, (int(total[1]) - failed) / seconds, found[50], found[99], failed)


#: wrk's script: each request carries the next token in turn (one caller each).
TOKENS_IN_TURN = """
tokens = {%s}
turn = 0
request = function()
  turn = turn %% #tokens + 1
  return wrk.format(nil, nil, {["Authorization"] = "Bearer " .. tokens[turn]})
end
"""


def load(url: str, tokens: list[str], callers: int, seconds: int) -> Load:
    """``callers`` connections asking ``url`` as fast as answers come, for ``seconds``, each
    request as the next of ``tokens`` in turn (several users: the web runs a quarter of
    its slots for any one of them)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(TOKENS_IN_TURN % ", ".join(f'"{t}"' for t in tokens))
        script.flush()
        done = subprocess.run(
            [wrk(), "--threads", "1", "--connections", str(callers), "--duration",
             f"{seconds}s", "--timeout", "30s", "--latency", "--script", script.name, url],
            check=True, capture_output=True, text=True)
    return parse(done.stdout, callers)
