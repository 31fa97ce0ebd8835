"""The parameters panel: the workload's params and the run settings, validated inline.

Every field checks its text with the catalogue's own `Param.parse` as the user
types; a bad value shows its error right under the field, and `errors()` lists
them so the app can refuse to run.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Generic, TypeVar

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.validation import ValidationResult, Validator
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from hotloop.catalog import RUN_LIMITS, Catalog, Param, Plan, until_ci_problem
from hotloop.console.messages import FormChanged
from hotloop.errors import HotloopError

RUNS = Param("runs", 10, *RUN_LIMITS["runs"], help="recorded repetitions")
WARMUP = Param("warmup", 1, *RUN_LIMITS["warmup"], help="unrecorded repetitions first")
SESSIONS = Param("sessions", 1, 1, 99, help="sessions of each kernel, alternating (a series)")
NO_KERNEL = "-"                 # the second kernel's choice: none, one session of one kernel
HERE = "this machine"            # the host choice's first: no [host.NAME] can be called so

C = TypeVar("C", bound=Widget)


class ParamValidator(Validator):
    def __init__(self, param: Param) -> None:
        super().__init__()
        self.param = param

    def validate(self, value: str) -> ValidationResult:
        try:
            self.param.parse(value.strip())
        except ValueError as e:
            return self.failure(str(e))
        return self.success()


class Field(Vertical, Generic[C]):
    """One setting: a label, a control of type C, and its error (shown only when there is
    one)."""

    DEFAULT_CSS = """
    Field { height: auto; }
    Field > Horizontal { height: 1; }
    Field .field-label { width: 11; color: $text-muted; }
    Field:focus-within .field-label { color: $text; text-style: bold; }
    Field .field-error { color: $error; display: none; padding-left: 11; height: auto; }
    Field.-invalid .field-error { display: block; }
    Field.-invalid .field-label { color: $error; }
    """

    def __init__(self, key: str, label: str, control: C, hint: str) -> None:
        super().__init__(classes="field")
        self.key, self.control, self.hint = key, control, hint
        self._label = label

    @property
    def error(self) -> str | None:
        """What is wrong with the value as typed, or None."""
        return None

    @property
    def value(self) -> Any:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(self._label, classes="field-label")
            yield self.control
        yield Static("", classes="field-error", markup=False)

    def set_error(self, message: str | None) -> None:
        self.set_class(bool(message), "-invalid")
        if self.is_mounted:
            self.query_one(".field-error", Static).update(message or "")


class ParamInput(Field[Input]):
    def __init__(self, key: str, param: Param, value: int | str) -> None:
        text = f"{value:_}" if isinstance(value, int) else str(value)
        control = Input(text, validators=[ParamValidator(param)],
                        validate_on=["changed", "submitted"], select_on_focus=True,
                        compact=True)
        hint = f"{param.name}: {param.help + ' ' if param.help else ''}({param.describe()})"
        super().__init__(key, param.name, control, hint)
        self.param = param

    @property
    def error(self) -> str | None:
        try:
            self.param.parse(self.control.value.strip())
        except ValueError as e:
            return str(e)
        return None

    @property
    def value(self) -> int | str:
        return self.param.parse(self.control.value.strip())

    def on_mount(self) -> None:
        self.set_error(self.error)


def parse_target(text: str) -> float | None:
    """The until_ci field: empty for none, else a percentage; ValueError saying why not."""
    text = text.strip().removesuffix("%").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a percentage") from None
    problem = until_ci_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class TargetValidator(Validator):
    def validate(self, value: str) -> ValidationResult:
        try:
            parse_target(value)
        except ValueError as e:
            return self.failure(str(e))
        return self.success()


class TargetInput(Field[Input]):
    """until_ci: stop once the median is known to +-this %; empty runs every run."""

    def __init__(self, value: float | None) -> None:
        control = Input("" if value is None else f"{value:g}", placeholder="all runs",
                        validators=[TargetValidator()], validate_on=["changed", "submitted"],
                        select_on_focus=True, compact=True)
        super().__init__("until_ci", "until ±%", control,
                         "until_ci: stop once the median's 95% CI is within ±this % "
                         "(at most runs); empty: every run")

    @property
    def error(self) -> str | None:
        try:
            parse_target(self.control.value)
        except ValueError as e:
            return str(e)
        return None

    @property
    def value(self) -> float | None:
        return parse_target(self.control.value)

    def on_mount(self) -> None:
        self.set_error(self.error)


class VsInput(Field[Input]):
    """A series' variants as changes to the form (run.variants.versus): "block_size=4096",
    "cpu=split"; empty for none.  Checked against the catalogue when `r` asks."""

    def __init__(self, value: str) -> None:
        control = Input(value, placeholder="K=V: a param or cpu", select_on_focus=True,
                        compact=True)
        super().__init__("vs", "vs", control,
                         "vs: a variant against the form's settings, its sessions "
                         "alternating with theirs (A B B A ...), then compared: a param "
                         "(block_size=4096), cpu=NAME; V1,V2 for several")

    @property
    def value(self) -> str:
        return " ".join(self.control.value.split())


class SelectField(Field[Select[str]]):
    """A choice among names; `value` is what the choice means (a name, or on/off)."""

    def __init__(self, key: str, label: str, choices: list[str], value: str, hint: str) -> None:
        if value not in choices:
            choices = [*choices, value]
        self.choices = list(choices)
        control: Select[str] = Select([(c, c) for c in choices], value=value,
                                      allow_blank=False, compact=True)
        super().__init__(key, label, control, hint)

    @property
    def choice(self) -> str:
        return str(self.control.value)

    def choose(self, value: str) -> None:
        if value not in self.choices:
            self.choices.append(value)
            self.control.set_options([(c, c) for c in self.choices])
        self.control.value = value


class ChoiceField(SelectField):
    @property
    def value(self) -> str:
        return self.choice


class OnOffField(SelectField):
    def __init__(self, key: str, label: str, value: bool, hint: str) -> None:
        super().__init__(key, label, ["on", "off"], "on" if value else "off", hint)

    @property
    def value(self) -> bool:
        return self.choice == "on"


class ParamsForm(Vertical):
    """Loaded with a plan (`load`); builds the edited plan back (`build`)."""

    DEFAULT_CSS = """
    ParamsForm { height: 1fr; }
    ParamsForm #form-summary { color: $text-muted; height: auto; max-height: 3; }
    ParamsForm #form-fields { height: 1fr; }
    ParamsForm .form-section { text-style: bold; color: $accent; margin-top: 1; height: 1; }
    ParamsForm #form-hint { color: $text-muted; height: auto; max-height: 2;
                            border-top: hkey $panel-lighten-1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cat: Catalog | None = None
        self.base: Plan | None = None
        self.fields: dict[str, Field[Any]] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="form-summary")
        yield VerticalScroll(id="form-fields", can_focus=False)
        yield Static("", id="form-hint", markup=False)

    async def load(self, cat: Catalog, plan: Plan) -> None:
        """Show `plan` (its workload's params filled in) for editing."""
        self.cat, self.base = cat, plan
        rp = cat.resolve(plan)
        w = rp.workload
        summary = f"[b]{plan.name}[/b] · {plan.summary or w.summary}" if plan.name != w.name \
            else f"[b]{w.name}[/b] · {w.summary}"
        self.query_one("#form-summary", Static).update(summary)
        box = self.query_one("#form-fields", VerticalScroll)
        await box.remove_children()
        fields: dict[str, Field[Any]] = {}
        widgets: list[Widget] = [Label(f"workload {w.name}", classes="form-section")]
        for name, p in w.params.items():
            value = rp.params[name]
            if p.choices:
                fields[f"param.{name}"] = ChoiceField(
                    f"param.{name}", name, list(p.choices), str(value),
                    f"{name}: {p.help} ({p.describe()})")
            else:
                fields[f"param.{name}"] = ParamInput(f"param.{name}", p, value)
        widgets += [fields[k] for k in fields]
        widgets.append(Label("run", classes="form-section"))
        fields["runs"] = ParamInput("runs", RUNS, plan.runs)
        fields["warmup"] = ParamInput("warmup", WARMUP, plan.warmup)
        fields["until_ci"] = TargetInput(plan.until_ci)
        fields["perf"] = OnOffField("perf", "perf", plan.perf,
                                     "perf: sample hot symbols while it runs")
        cpus = list(cat.cpus) or ["default"]
        kernels = list(cat.kernels) or ["default"]
        fields["cpu"] = ChoiceField("cpu", "cpu", cpus, plan.cpu,
                                    "cpu: where the processes run and how they are scheduled")
        fields["kernel"] = ChoiceField("kernel", "kernel", kernels, plan.kernel,
                                       "kernel: the label results carry and its sysctls")
        # a series (run --sessions): the kernel above against a second one, or one repeated
        old_vs = self.fields.get("kernel2")
        vs = old_vs.value if isinstance(old_vs, ChoiceField) else NO_KERNEL
        fields["kernel2"] = ChoiceField("kernel2", "vs kernel", [NO_KERNEL, *kernels],
                                        vs if vs in kernels else NO_KERNEL,
                                        "vs kernel: a second kernel profile, its sessions "
                                        "alternating with the first's (A B B A ...), then "
                                        "compared")
        old_vs = self.fields.get("vs")
        fields["vs"] = VsInput(old_vs.value if isinstance(old_vs, VsInput) else "")
        old_n = self.fields.get("sessions")
        fields["sessions"] = ParamInput("sessions", SESSIONS,
                                        old_n.value if isinstance(old_n, ParamInput)
                                        and not old_n.error else 1)
        widgets += [fields["runs"], fields["until_ci"], fields["warmup"], fields["perf"],
                    fields["cpu"], fields["kernel"], fields["kernel2"], fields["vs"],
                    fields["sessions"]]
        if cat.hosts:               # where it runs: here, or a [host.NAME] over SSH
            old = self.fields.get("host")
            host = old.value if isinstance(old, ChoiceField) else HERE
            fields["host"] = ChoiceField("host", "host", [HERE, *cat.hosts],
                                         host if host in cat.hosts else HERE,
                                         "host: this machine, or one of the profiles' "
                                         "[host.NAME] over SSH (its own profiles resolve "
                                         "the workload)")
            widgets.append(fields["host"])
        self.fields = fields
        await box.mount_all(widgets)
        box.scroll_home(animate=False)
        self.hint("")

    def hint(self, text: str) -> None:
        self.query_one("#form-hint", Static).update(text)

    def choose_profile(self, cat: Catalog, kind: str, name: str) -> None:
        """A CPU or kernel profile picked in the catalogue: set, and said in the hint."""
        self.set_choice(kind, name)
        if kind == "cpu":
            cpu = cat.cpus[name]
            self.hint(f"cpu {name}: {cpu.summary} (cpus "
                      f"{','.join(map(str, cpu.cpus)) or 'any'}, sched {cpu.sched})")
        else:
            self.hint(f"kernel {name}: {cat.kernels[name].summary}")

    def show_batch(self, name: str, variants: list[tuple[str, Plan]]) -> str:
        """A plan with list params is a batch: the form holds its first variant.  The note
        shown in the hint, returned (for the log)."""
        labels = ", ".join(label for label, _ in variants)
        keys = sorted({k for _, v in variants for k in v.params
                       if v.params[k] != variants[0][1].params[k]})
        note = (f"{name} is a batch of {len(variants)} variants ({labels}); the form holds "
                f"the first, change {', '.join(keys) or 'the params'} for another; run them "
                f"all headless with `hotloop run {name}`")
        self.hint(note)
        return note

    def set_choice(self, key: str, value: str) -> None:
        f = self.fields.get(key)
        if isinstance(f, SelectField):
            f.choose(value)

    @property
    def host(self) -> str | None:
        """The [host.NAME] chosen to run on, or None for this machine."""
        f = self.fields.get("host")
        return f.value if isinstance(f, ChoiceField) and f.value != HERE else None

    @property
    def vs(self) -> str:
        """The variants asked for against the form's settings ("" for none)."""
        f = self.fields.get("vs")
        return f.value if isinstance(f, VsInput) else ""

    @property
    def series(self) -> tuple[list[str], int] | None:
        """The kernels and sessions of each a series is asked for (a second kernel, a
        variant, or more than one session), else None: one session."""
        vs, n = self.fields.get("kernel2"), self.fields.get("sessions")
        kernel = self.fields["kernel"].value if "kernel" in self.fields else "default"
        second = vs.value if isinstance(vs, ChoiceField) and vs.value != NO_KERNEL else None
        count = int(n.value) if isinstance(n, ParamInput) and not n.error else 1
        if second is None and count <= 1 and not self.vs:
            return None
        return ([kernel] if second is None else [kernel, second]), int(count)

    def errors(self) -> list[str]:
        return [f"{f.key.removeprefix('param.')}: {f.error}" for f in self.fields.values()
                if f.error]

    def build(self, name: str | None = None) -> Plan:
        """The plan as edited; ValueError naming the first bad field."""
        if self.base is None:
            raise ValueError("nothing selected")
        bad = self.errors()
        if bad:
            raise ValueError("; ".join(bad))
        params = {k.removeprefix("param."): f.value for k, f in self.fields.items()
                  if k.startswith("param.")}
        return replace(self.base, name=name or self.base.name, params=params,
                       runs=self.fields["runs"].value, warmup=self.fields["warmup"].value,
                       until_ci=self.fields["until_ci"].value,
                       perf=self.fields["perf"].value, cpu=self.fields["cpu"].value,
                       kernel=self.fields["kernel"].value)

    def built(self) -> tuple[Plan, bool] | None:
        """The plan as edited and whether it differs from the one loaded (params resolved);
        the loaded one, edited, when the form does not build; None before a load."""
        base = self.base
        if base is None or self.cat is None:
            return None
        try:
            plan = self.build()
            a, b = self.cat.resolve(plan), self.cat.resolve(base)
        except (ValueError, HotloopError):
            return base, True
        return plan, a.params != b.params or replace(plan, params={}) != replace(base, params={})

    # --- events --------------------------------------------------------------

    def _field_of(self, widget: Widget) -> Field[Any] | None:
        for node in widget.ancestors_with_self:
            if isinstance(node, Field):
                return node
        return None

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        f = self._field_of(event.widget)
        if f is not None:
            self.hint(f.hint)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.screen.focus_next()            # enter: on to the next field

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        f = self._field_of(event.input)
        if isinstance(f, ParamInput):
            f.set_error(f.error)
        self.post_message(FormChanged())

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        f = self._field_of(event.select)
        if (f is not None and f.key in ("cpu", "kernel") and self.cat is not None
                and event.select.has_focus):
            table = self.cat.cpus if f.key == "cpu" else self.cat.kernels
            prof = table.get(str(event.value))
            if prof is not None:
                self.hint(f"{f.key} {prof.name}: {prof.summary}")
        self.post_message(FormChanged())

