"""A circuit's input files named on the command line (``circuit.witness``, ``circuit.c1``): one
path, a list, a folder or a glob expanded in order, and the proof ids named after them."""

from __future__ import annotations

import os


def expand_files(given, suffix: str, name: str, usage: str) -> tuple[str, ...]:
    """A circuit's input files (``name``: the field, e.g. ``circuit.witness``) as absolute paths,
    in order: one path or a list of them, where a folder stands for the files in it ending in
    ``suffix`` (sorted by name) and a glob (``*``, ``?``, ``[``) for the files it matches
    (sorted). A folder or glob that yields nothing, or nothing given, is refused (``usage``)."""
    import glob

    items = [given] if isinstance(given, str) else list(given or [])
    if not items:
        raise ValueError(usage)
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or not item:
            raise ValueError(f"{name}: {item!r} is not a path")
        path = os.path.expanduser(item)
        if os.path.isfile(path):  # before the glob test: a file's name may hold [ or *
            found = [path]
        elif os.path.isdir(path):
            found = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(suffix))
            if not found:
                raise ValueError(f"{name}={item}: the folder holds no {suffix} files")
        elif glob.has_magic(path):
            found = sorted(f for f in glob.glob(path) if os.path.isfile(f))
            if not found:
                raise ValueError(f"{name}={item}: no file matches")
        else:
            found = [path]  # a missing file is named where it is read
        out.extend(os.path.abspath(f) for f in found)
    return tuple(out)


def file_names(paths, suffix: str, default: str) -> tuple[str, ...]:
    """Proof ids named after their input files: the file name less ``suffix``, characters other
    than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_`` and runs of dots by one (an id
    is a directory name, and outputs refuses ids with ``..``; ``default`` when nothing is left),
    a second file of the same name numbered (``w``, ``w-2``)."""
    import re

    names: list[str] = []
    seen: set[str] = set()
    for p in paths:
        base = os.path.basename(p)
        base = base[: -len(suffix)] if base.endswith(suffix) else base
        base = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]", "_", base)).lstrip(".") or default
        name, n = base, 1
        while name in seen:
            n += 1
            name = f"{base}-{n}"
        seen.add(name)
        names.append(name)
    return tuple(names)
