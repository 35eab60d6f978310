"""Two import-linter contract types the built-in ones do not give (pyproject.toml registers
them; `make test` runs them with the rest through `lint-imports`).

- `no_cycles`: no import circle among the modules of the packages named, at any depth.
  `acyclic_siblings` looks for circles between the children of each package, which misses one
  that runs through a package's own __init__ (the package is not one of its children); this
  looks at every module.
- `own_package_untouched`: no module imports a package it lies inside (its own __init__ or an
  ancestor's), so a package's __init__ can stay a list of re-exports.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output
from importlinter.application import contract_utils
from importlinter.application.contract_utils import AlertLevel


def _internal(graph: ImportGraph, packages: set[str]) -> set[str]:
    return {m for m in graph.modules if any(m == p or m.startswith(p + ".") for p in packages)}


def _circles(graph: ImportGraph, modules: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module, and the modules that import
    themselves (Tarjan's algorithm, iterative: an import chain can be deeper than the stack)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if child < len(edges[node]):
                work.append((node, child + 1))
                nxt = edges[node][child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found)


class NoCyclesContract(Contract):
    type_name = "no_cycles"

    packages = fields.ListField(subfield=fields.StringField())
    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)
    unmatched_ignore_imports_alerting = fields.EnumField(AlertLevel, default=AlertLevel.ERROR)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=self.unmatched_ignore_imports_alerting,  # type: ignore[arg-type]
        )
        modules = _internal(graph, set(self.packages))  # type: ignore[arg-type]
        circles = _circles(graph, modules)
        edges = [
            [
                (m, i)
                for m in c
                for i in sorted(graph.find_modules_directly_imported_by(m))
                if i in c
            ]
            for c in circles
        ]
        return ContractCheck(
            kept=not circles,
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
            metadata={"circles": circles, "edges": edges},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for circle, edges in zip(check.metadata["circles"], check.metadata["edges"], strict=True):
            output.print_error(f"{len(circle)} modules import each other in a circle:")
            output.new_line()
            for importer, imported in edges:
                output.print(f"- {importer} -> {imported}")
            output.new_line()


class OwnPackageUntouchedContract(Contract):
    type_name = "own_package_untouched"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        modules = _internal(graph, set(self.packages))  # type: ignore[arg-type]
        found = sorted(
            (m, imported)
            for m in modules
            for imported in graph.find_modules_directly_imported_by(m)
            if m.startswith(imported + ".")
        )
        return ContractCheck(kept=not found, warnings=[], metadata={"imports": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, package in check.metadata["imports"]:
            output.print_error(f"{importer} imports {package}, a package it lies inside")
        output.new_line()
