"""python/opprof/contract.py against agents/contract/opprof_contract.h, the contract's definition: the same
names (the header's without OPPROF_) with the same values, none missing on either side."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import opprof
from opprof import contract

HEADER = Path(__file__).resolve().parents[2] / "agents" / "contract" / "opprof_contract.h"
# A contract entry: #define OPPROF_<NAME> "<text>" or an integer, optionally followed by a comment.
ENTRY = re.compile(r'^#define OPPROF_([A-Z0-9_]+)[ \t]+("(?:[^"\\]|\\.)*"|-?[0-9]+)[ \t]*(?:/\*.*\*/)?[ \t]*$')


def header_entries(text: str) -> dict[str, str | int]:
    entries: dict[str, str | int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("#define OPPROF_"):
            continue
        match = ENTRY.match(line)
        if match is None:
            if line.split()[1] == "OPPROF_CONTRACT_H":  # the include guard defines no value
                continue
            raise AssertionError(f"{HEADER}:{number}: not a contract entry the test can read: {line!r}")
        name, value = match.groups()
        assert name not in entries, f"{HEADER}:{number}: OPPROF_{name} defined twice"
        entries[name] = ast.literal_eval(value)
    return entries


def python_entries() -> dict[str, str | int]:
    return {name: value for name, value in vars(contract).items() if name.isupper()}


def test_python_copy_equals_the_header():
    header = header_entries(HEADER.read_text(encoding="utf-8"))
    python = python_entries()
    assert len(header) >= 20, "the header parser found too few entries"
    assert sorted(set(header) - set(python)) == [], "in the header, missing in contract.py"
    assert sorted(set(python) - set(header)) == [], "in contract.py, missing in the header"
    for name, value in header.items():
        assert python[name] == value, f"OPPROF_{name}: header {value!r}, contract.py {python[name]!r}"
        assert type(python[name]) is type(value), f"OPPROF_{name}: header {type(value)}, contract.py {type(python[name])}"


def test_parser_reads_strings_integers_and_rejects_other_definitions():
    text = '#define OPPROF_A "x \\"y\\"" /* c */\n#define OPPROF_B 8\n#define OPPROF_CONTRACT_H\n#define OTHER 1\n'
    assert header_entries(text) == {"A": 'x "y"', "B": 8}
    try:
        header_entries('#define OPPROF_C ("x")\n')
    except AssertionError as error:
        assert "OPPROF_C" in str(error)
    else:
        raise AssertionError("an unreadable entry was skipped silently")


def test_package_names_come_from_the_contract():
    assert opprof.MODULE_RANGE_PREFIX == contract.MODULE_RANGE_PREFIX
    assert opprof.FX_MODULES_FILENAME == contract.FX_MODULES_FILE
