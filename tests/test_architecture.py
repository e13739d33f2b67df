"""The layout docs/architecture.md describes, kept true: layers, no import circles, short modules."""
import os
import tomllib
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent
#: The project's own packages, as import-linter's contract names them (bench/ and tests/ sit on top
#: of everything and are left out): a new app joins every check here by joining that list.
PACKAGES = tuple(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"])
MAX_MODULE_LINES = 400


def test_each_app_imports_only_the_apps_beneath_it():
    """The import-linter contracts in pyproject.toml ([tool.importlinter]) are kept."""
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def import_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (Tarjan's algorithm)."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return circles


def test_no_module_imports_itself_through_others():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert import_circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    """The check above could fail: a graph with a -> b -> c -> a has one circle."""
    graph = grimp.ImportGraph()
    for importer, imported in (("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")):
        graph.add_import(importer=importer, imported=imported)
    assert import_circles(graph) == [["a", "b", "c"]]


def test_no_module_is_over_400_lines():
    """Split by responsibility before a module passes ~400 lines (migrations are generated, so exempt)."""
    long = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            lines = path.read_text().count("\n")
            if lines > MAX_MODULE_LINES:
                long[os.path.relpath(path, ROOT)] = lines
    assert long == {}


def used_in(templates: str, name: str) -> bool:
    return f"{{% {name} " in templates or f"{{% {name} %}}" in templates or f"|{name}" in templates


def test_every_template_tag_and_filter_is_used_by_a_template():
    """A tag no template uses rots unnoticed (``digest_json_ld`` called ``news_article`` wrongly for months)."""
    from django.template.library import import_library

    templates = "\n".join(path.read_text() for path in (ROOT / "templates").rglob("*.*"))
    unused = [
        f"{module}.{name}"
        for module in ("digests.templatetags.reader", "blog.templatetags.cards", "editbar.templatetags.editbar")
        for name in [*import_library(module).tags, *import_library(module).filters]
        if not used_in(templates, name)
    ]
    assert unused == []
