"""What skills cost an agent: the system prompt's `# Skills` section with N skills, and finding them.

Writes N skills (each a `SKILL.md` with a ~200-character description and a ~2 KB body) into a
private config directory, then measures, in this process:

* the section's size in characters and estimated tokens (characters / 4, as the scripted model
  estimates), how many skills it describes and how many it only names past the cap; the bodies'
  total, which stays out of the prompt until the `skill` tool loads one;
* discovering the skills for one agent (`agent_catalog`: listing, confined reads, the YAML parse —
  cached by text after the first), p50 over repeats, the first (cold) look separately;
* building the section from the found skills.

Prints one JSON object. No target: the figure for issue 33's "system-prompt cost with 50 skills".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import environment, summary_ms

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _write_skills(root: Path, count: int) -> int:
    body = "Step: do the careful thing with the files named in the task.\n" * 32
    for index in range(count):
        folder = root / f"skill-{index:03d}"
        folder.mkdir(parents=True)
        description = (
            f"Skill number {index} handles one kind of task in this codebase, with the house conventions "
            "for naming, tests and commits. Use when the task mentions that kind of work or its files."
        )
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{index:03d}\ndescription: {description}\n---\n{body}"
        )
        (folder / "REFERENCE.md").write_text("reference\n")
    return len(body) * count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=50, help="skills to write (default 50)")
    parser.add_argument("--repeat", type=int, default=20, help="discoveries timed (default 20)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="corral-bench-skills-") as tmp:
        base = Path(tmp)
        os.environ["XDG_CONFIG_HOME"] = str(base / "config")
        os.environ["CLAUDE_CONFIG_DIR"] = str(base / "claude")
        os.environ["CODEX_HOME"] = str(base / "codex")
        (base / "work").mkdir()
        bodies = _write_skills(base / "config" / "corral" / "skills", args.skills)

        from corral.skills import agent_catalog, skills_for_agent, skills_section

        started = time.perf_counter()
        catalog = agent_catalog(base / "work")
        cold = time.perf_counter() - started
        samples: list[float] = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            catalog = agent_catalog(base / "work")
            samples.append(time.perf_counter() - started)
        section_samples: list[float] = []
        section = ""
        for _ in range(args.repeat):
            started = time.perf_counter()
            section = skills_section(catalog.skills) or ""
            section_samples.append(time.perf_counter() - started)
        tools, _ = skills_for_agent(catalog)
        described = section.count("\n- ")
        load = os.getloadavg()[0]
    result = {
        "skills": args.skills,
        "section_chars": len(section),
        "section_tokens_estimate": len(section) // 4,
        "tokens_per_skill": round(len(section) / 4 / max(1, args.skills), 1),
        "described": described,
        "named_past_cap": args.skills - described,
        "bodies_chars_kept_out": bodies,
        "tool_offered": bool(tools),
        "discover_cold_ms": round(cold * 1000, 3),
        "discover": summary_ms(samples),
        "section_build": summary_ms(section_samples),
        "load_1m": load,
        "environment": environment("bench_skills.py"),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
