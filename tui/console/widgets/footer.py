"""The footer: Textual's, but a change of which keys are enabled is made in place.

Textual's Footer recomposes (removes and mounts every key, then a layout of the screen)
whenever the bindings may have changed: a focus move, `refresh_bindings`.  At `r` that
happened for the Run/Stop change (and again for the focus move on a narrow screen),
45-55 ms on the event loop plus the layout.  The keys shown are the same then, only
their enabled state differs: here those keys are restyled (a class), and the footer is
recomposed only when the keys themselves change (another screen's bindings, say).
"""
from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

Shown = tuple[str, str, str]        # key, action, description


class ConsoleFooter(Footer):

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._update_in_place():
            self.call_after_refresh(self.recompose)

    def _wanted(self) -> list[tuple[Shown, bool]] | None:
        """The keys compose() would show, with whether each is enabled; None when there
        are groups (shown another way: left to compose)."""
        active = self.screen.active_bindings
        first: dict[str, tuple[Shown, bool]] = {}
        for _, binding, enabled, _tooltip in active.values():
            if not binding.show:
                continue
            if binding.group is not None:
                return None
            first.setdefault(binding.action, ((binding.key, binding.action,
                                               binding.description), enabled))
        wanted = list(first.values())
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, binding, enabled, _ = found
                wanted.append(((binding.key, binding.action, binding.description), enabled))
        return wanted

    def _update_in_place(self) -> bool:
        """Enable/disable the keys shown now; False when other keys are to be shown."""
        keys = [k for k in self.children if isinstance(k, FooterKey)]
        if not keys or len(keys) != len(self.children):
            return False
        wanted = self._wanted()
        if wanted is None or [w for w, _ in wanted] != \
                [(k.key, k.action, k.description) for k in keys]:
            return False
        for key, (_, enabled) in zip(keys, wanted):
            if key._disabled == enabled:
                key._disabled = not enabled
                key.set_class(not enabled, "-disabled")
        return True
