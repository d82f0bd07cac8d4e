"""Random values, made once, for the passwords and keys compose/compose.yaml requires (it
has no defaults for them), written to compose/.env: docker compose reads that file by
itself, and only its owner can read it. A value already there is kept, never replaced:
PostgreSQL takes its password only when its volume is new, and the gateway identity stored
in PostgreSQL is sealed with TUNEPLANE_SECRET_ENC_KEY. A variable set in the environment
wins over the file (docker compose's rule).

    scripts/compose-secrets                   add to compose/.env what it lacks
    scripts/compose-secrets --env-file PATH   another file (docker compose --env-file PATH)

Standard library only: it runs on a Docker host without the project's environment.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What compose requires without a default, and the random bytes of each value. Values are
#: hex: they go into the database URL and the .env file as they are.
GENERATED: dict[str, int] = {
    "TUNEPLANE_POSTGRES_PASSWORD": 24,
    "TUNEPLANE_S3_ACCESS_KEY": 10,
    "TUNEPLANE_S3_SECRET_KEY": 30,
    "TUNEPLANE_WEB_JWT_SECRET": 32,
    "TUNEPLANE_SECRET_ENC_KEY": 32,
}


def assignment(line: str) -> tuple[str, str] | None:
    """``NAME=value`` of one .env line (``export`` allowed), or None for anything else."""
    name, sep, value = line.partition("=")
    name = name.strip().removeprefix("export ").strip()
    if not sep or not name or name.startswith("#"):
        return None
    return name, value.strip()


def completed(text: str, made: dict[str, str]) -> tuple[str, list[str]]:
    """The file with a value of ``made`` for each generated name it lacks or leaves blank,
    its other lines as they were; and the names given values."""
    lines = text.splitlines()
    values: dict[str, tuple[int, str]] = {}  # name: (line, value); the last one counts
    for i, line in enumerate(lines):
        if (found := assignment(line)) is not None:
            values[found[0]] = (i, found[1])
    wanted = [name for name in GENERATED if not values.get(name, (0, ""))[1]]
    for name in wanted:
        line = f"{name}={made[name]}"
        if name in values:
            lines[values[name][0]] = line
        else:
            lines.append(line)
    return "".join(f"{line}\n" for line in lines), wanted


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` at once with a file only its owner reads (0600)."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=".env.")  # created 0600
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(name, path)
    except BaseException:
        os.unlink(name)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/compose-secrets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-file", type=Path, default=ROOT / "compose" / ".env",
                        help="the file to complete (default compose/.env)")
    args = parser.parse_args(argv)
    path: Path = args.env_file
    text = path.read_text() if path.exists() else ""
    made = {name: secrets.token_hex(size) for name, size in GENERATED.items()}
    updated, wanted = completed(text, made)
    write_private(path, updated)  # also narrows an existing file to 0600
    kept = [name for name in GENERATED if name not in wanted]
    print(f"{path}: generated {', '.join(wanted) or 'nothing'}"
          f"{'; kept ' + ', '.join(kept) if kept else ''}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
