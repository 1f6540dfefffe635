"""Run every benchmark script in this folder and print one JSON object with all results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).parent
    results = {}
    for script in sorted(here.glob("bench_*.py")):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            results[script.stem] = {"error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
            continue
        results[script.stem] = json.loads(done.stdout)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
