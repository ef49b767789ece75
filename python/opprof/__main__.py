"""``python -m opprof <command> ...``: the package's Python-side commands.

  capture    run a workload and record one capture pass (python -m opprof.capture)
  metricset  print the ncu metric names for a chip (python -m opprof.metricset)
  optimize   profile-guided rewrites of a workload (python -m opprof.optimize; opprof optimize runs it)
"""

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"capture": "opprof.capture", "metricset": "opprof.metricset", "optimize": "opprof.optimize.__main__"}
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in commands:
        print(__doc__.strip(), file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    import importlib

    module = importlib.import_module(commands[argv[0]])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
