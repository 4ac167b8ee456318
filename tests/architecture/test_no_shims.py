"""The package holds no shim: no module that only re-exports names kept for an old import path.

A module whose body is a docstring, imports and ``__all__`` runs nothing of its own. Outside the
faces (:data:`test_import_graph.FACES`, the import paths users are shown) such a module is a
shim: code should import the module that defines the names. A package's ``__init__`` that gathers
its own submodules' names is that package's API, not a shim; one that re-exports another
package's names is.
"""

from __future__ import annotations

import ast
from pathlib import Path

from test_import_graph import FACES, ROOT, module_name, only_re_exports


def sources(tree: ast.Module, here: str, is_package: bool) -> set[str]:
    """The modules a module's import statements read from (relative ones resolved against ``here``)."""
    package = here if is_package else here.rpartition(".")[0]
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            found.add(".".join([*anchor, node.module] if node.module else anchor))
    return found


def is_shim(source: str, name: str, is_package: bool) -> bool:
    """Only re-exports, of at least one name, and (for a package) not all from the package's own modules."""
    tree = ast.parse(source)
    origins = sources(tree, name, is_package)
    if not origins or not only_re_exports(tree):
        return False
    return not is_package or any(o != name and not o.startswith(name + ".") for o in origins)


def re_exports(source: str) -> list[str]:
    """The names a module imports under their own name (``from a import b as b``): kept for another import path."""
    return [alias.name for node in ast.parse(source).body if isinstance(node, ast.ImportFrom)
            for alias in node.names if alias.asname == alias.name]


def re_exporters(root: Path = ROOT) -> list[str]:
    return sorted(module_name(p, root) for p in root.rglob("*.py") if re_exports(p.read_text(encoding="utf-8")))


def shims(root: Path = ROOT) -> list[str]:
    return sorted(module_name(p, root) for p in root.rglob("*.py")
                  if is_shim(p.read_text(encoding="utf-8"), module_name(p, root), p.name == "__init__.py"))


def test_a_module_that_only_re_exports_is_a_shim_and_a_package_gathering_its_own_modules_is_not() -> None:
    moved = '"""A face: ``omnimem.old`` keeps working."""\n\nfrom omnimem.new import thing\n\n__all__ = ["thing"]\n'
    assert is_shim(moved, "omnimem.old", is_package=False)
    assert is_shim(moved, "omnimem.old", is_package=True)  # a package re-exporting another package's names
    own = '"""The index."""\n\nfrom omnimem.index.dense import DenseIndex\nfrom .sparse import SparseIndex\n'
    assert not is_shim(own, "omnimem.index", is_package=True)
    assert not is_shim('"""Only a docstring."""\n', "omnimem.empty", is_package=True)
    assert not is_shim("from omnimem.new import thing\n\nVALUE = thing()\n", "omnimem.uses", is_package=False)


def test_the_package_holds_no_shim_outside_the_faces() -> None:
    found = [name for name in shims() if name not in FACES]
    assert not found, "modules that only re-export (import the defining module instead, and remove these):\n" + \
        "\n".join(found)


def test_an_import_under_its_own_name_is_a_re_export() -> None:
    assert re_exports("from omnimem.results import AddResult as AddResult, Hit\nimport json as json\n") == ["AddResult"]
    assert re_exports("from omnimem.contract.validate import metadata as clean_metadata\n") == []


def test_no_module_outside_the_faces_re_exports_a_name_for_another_import_path() -> None:
    found = [name for name in re_exporters() if name not in FACES]
    assert not found, "modules re-exporting names (import them where they are defined, and drop `as`):\n" + \
        "\n".join(found)
