"""The catalogue: plans, workloads, CPU and kernel profiles, as one tree."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from hotloop.catalog import Catalog
from hotloop.console.messages import CatalogPicked

SECTIONS = (("plan", "plans"), ("workload", "workloads"), ("cpu", "cpu profiles"),
            ("kernel", "kernel profiles"))


class CatalogTree(Tree[tuple[str, str]]):
    """Enter on a leaf posts CatalogPicked(kind, name)."""

    DEFAULT_CSS = """
    CatalogTree { height: 1fr; min-height: 4; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("catalogue", id=id)
        self.show_root = False
        self.guide_depth = 2

    def fill(self, cat: Catalog) -> None:
        self.clear()
        for kind, title in SECTIONS:
            table = cat.table(kind)
            branch = self.root.add(Text(title, style="bold"), expand=True)
            for name in table:
                branch.add_leaf(name, data=(kind, name))

    def node_for(self, kind: str, name: str) -> TreeNode[tuple[str, str]] | None:
        def walk(node: TreeNode[tuple[str, str]]) -> TreeNode[tuple[str, str]] | None:
            if node.data == (kind, name):
                return node
            for child in node.children:
                found = walk(child)
                if found is not None:
                    return found
            return None
        return walk(self.root)

    def point_at(self, kind: str, name: str) -> bool:
        node = self.node_for(kind, name)
        if node is None:
            return False
        self.move_cursor(node)
        # after a fill() the lines are laid out on the next refresh: point again then
        self.call_after_refresh(self.move_cursor, node)
        return True

    def on_tree_node_selected(self, event: Tree.NodeSelected[tuple[str, str]]) -> None:
        event.stop()
        if event.node.data is not None:
            kind, name = event.node.data
            self.post_message(CatalogPicked(kind, name))
