"""The user documentation holds together: the README's front page answers what, whether and how to
start; every relative link of the README, the ``docs/`` pages and the chart README reaches a file that
ships, and every ``#anchor`` a heading of it (GitHub's heading slugs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "charts" / "gang-scheduler" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor on ``page`` (a repeated heading gets ``-1``, ``-2``, … as on GitHub)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if m := re.match(r"#{1,6} (.+)", line):
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    return [t for t in LINK.findall(FENCE.sub("", page.read_text())) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_a_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, broken


def test_slug_follows_github() -> None:
    assert slug("What `make run` shows") == "what-make-run-shows"
    assert slug("Kubernetes v1.37: what to enable") == "kubernetes-v137-what-to-enable"
    assert slug("scheduler-plugins (Coscheduling) clusters") == "scheduler-plugins-coscheduling-clusters"


def test_readme_front_page_answers_what_whether_and_how_to_start() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = [line.split("#")[0].strip() for block in re.findall(r"^```sh\n(.*?)^```", readme, re.S | re.M)
                for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert commands[:2] == ["make run", "make test"]
    headings = [line for line in readme.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## Contents", "## How it compares", "## What it does not do"]
    compared = readme.split("## How it compares", 1)[1].split("\n## ", 1)[0]
    rows = [row.split("|")[1] for row in compared.splitlines() if row.startswith("| **")]
    for name in ("gang-scheduler", "kube-scheduler v1.37", "Coscheduling", "Volcano", "Kueue", "YuniKorn"):
        assert sum(name in row for row in rows) == 1, name
    assert "keep Kueue for quota" in compared
    for page in ("dra", "volumes", "preemption", "operator", "clusters", "operations"):
        assert f"(docs/{page}.md" in readme, page


def test_every_status_is_in_the_readme_table() -> None:
    from scheduler.offline import simulate as sim

    statuses = {sim.SCHEDULED, sim.PREEMPTED, sim.UNSCHEDULABLE, sim.WAITING, sim.INVALID}
    section = (ROOT / "README.md").read_text().split("### Statuses", 1)[1].split("\n## ", 1)[0]
    rows = [row.split("|")[1].strip(" `") for row in section.splitlines() if row.startswith("| `")]
    assert sorted(rows) == sorted(statuses)


GENERATED = {".chaos-report.json"}  # written by `make chaos`, not shipped
CITED = re.compile(r"`((?:scheduler|tests|charts|deploy|docs|files|templates)/[\w./-]*\w/?"
                   r"|[\w.-]+\.(?:py|yaml|json|md|txt|lock))`")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_a_page_cites_ships(page: Path) -> None:
    """A path in backticks (``scheduler/live/binder.py``, ``deploy/examples/gang.yaml``, ``values.schema.json``)
    names a file or folder of this repository: from its top, from the page's folder, or, for a bare
    file name, anywhere in it."""
    missing = []
    for cited in set(CITED.findall(FENCE.sub("", page.read_text()))):
        if cited.startswith(".") and cited in GENERATED:
            continue
        if "/" in cited.rstrip("/"):
            found = (ROOT / cited).exists() or (page.parent / cited).exists()
        else:
            found = any(p.is_file() for p in ROOT.glob(f"**/{cited}") if ".venv" not in p.parts)
        if not found:
            missing.append(cited)
    assert not missing, sorted(missing)


HISTORY = re.compile(r"\bissues? #?\d|\.\./shared/|\bshared/(?:reference|examples)|\bI measured\b", re.I)
SHIPPED = ["README.md", "Makefile", "Dockerfile", "docs", "charts", "deploy", "scheduler"]


def test_what_ships_speaks_of_the_product_not_of_its_development() -> None:
    """No tracker numbers, no lab-notebook voice, no citation of documents that do not ship."""
    files = [p for top in SHIPPED for p in ([ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*"))
             if p.is_file() and p.suffix in {"", ".md", ".py", ".yaml", ".json", ".txt", ".tpl"}]
    assert len(files) > 100
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if HISTORY.search(line)]
    assert not found, found


def test_the_readme_job_is_valid_and_the_operator_makes_it_one_gang_of_four() -> None:
    """The quickstart's gang Job: a v1.37 API server stores it as written (strict schema), it carries the
    operator's opt-in label, and the operator makes it the PodGroup the README names, of four."""
    import kubernetes_validate  # type: ignore[import-untyped]
    import yaml

    from scheduler.groups.workloads import JOB, OPT_IN, OPT_IN_VALUE, GroupSpec, desired

    quickstart = (ROOT / "README.md").read_text().split("## Quickstart on a cluster", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"^```yaml\n(.*?)^```", quickstart, re.S | re.M)
    job = yaml.safe_load(block)
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    assert job["metadata"]["labels"][OPT_IN] == OPT_IN_VALUE
    name = job["metadata"]["name"]
    assert desired(JOB, job, composite=True).groups == (GroupSpec("PodGroup", name, 4),)
    assert f"Its PodGroup is `{name}`" in quickstart
