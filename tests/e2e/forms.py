"""The console's run form filled in as a user would, for the tests that drive it with Pilot."""
from __future__ import annotations

from test_app import set_choice, wait_for
from textual.widgets import Input, Select

from hotloop.console.app import HotloopApp
from hotloop.console.widgets.catalog_tree import CatalogTree


async def fill_form(pilot, app: HotloopApp, **fields: str) -> None:
    """Set the form's fields in the order given, then leave the form (escape: keys are
    bindings again, the catalogue focused).  A choice is chosen; a text field is cleared and
    typed in key by key.  `param_NAME` is the workload parameter NAME (the form's
    param.NAME): fill_form(pilot, app, kernel="k1", param_count="2000", runs="3")."""
    for name, value in fields.items():
        key = "param." + name.removeprefix("param_") if name.startswith("param_") else name
        control = app.main_screen.form.fields[key].control
        if isinstance(control, Select):
            await set_choice(pilot, app, key, value)
            continue
        assert isinstance(control, Input), (key, control)
        control.focus()
        await pilot.pause()
        control.value = ""
        await pilot.press(*value)
        await wait_for(pilot, lambda c=control, v=value: c.value == v, 5, f"{key} = {value}")
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(app.focused, CatalogTree), 5, "the catalogue")
