"""``tff-idp COMMAND [...]``: one console script for the package's command-line tools, the
same as ``python -m tff_idp.COMMAND``: run (train a config or a table), report (a table's
report from its results), data (build, fetch, stats), bench (backend timings), slurm
(cluster jobs of a table)."""
from __future__ import annotations

import importlib
import sys

COMMANDS = {"run": "tff_idp.run", "report": "tff_idp.report", "data": "tff_idp.data.__main__",
            "bench": "tff_idp.bench", "slurm": "tff_idp.slurm"}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip() + "\n\ncommands: " + ", ".join(COMMANDS) +
              "\n`tff-idp COMMAND --help` for a command's options")
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"error: command={argv[0]!r}: choose from {', '.join(COMMANDS)}",
              file=sys.stderr)
        return 2
    return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
