"""Print the installed version of each dependency pyproject.toml names (run with the venv's Python).

Usage: python .ci/versions.py LABEL [EXTRA ...]   — the runtime dependencies plus each EXTRA's
(`all`: every extra), as one line `LABEL: name version, …`.
"""

import re
import sys
import tomllib
from importlib.metadata import version

label, *extras = sys.argv[1:]
with open("pyproject.toml", "rb") as file:
    project = tomllib.load(file)["project"]
deps = list(project["dependencies"])
optional = project["optional-dependencies"]
for extra in optional if extras == ["all"] else extras:
    deps.extend(optional[extra])
names = sorted({re.split(r"[\[<>=!~; ]", dep, maxsplit=1)[0] for dep in deps})
print(f"{label}:", ", ".join(f"{name} {version(name)}" for name in names))
