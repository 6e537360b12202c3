"""``tcopy run``: run a script step by step and show every tensor after each step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer

from tcopy_cli import __version__
from tcopy_cli.cli.app import EXIT_SCRIPT, EXIT_USAGE, fail
from tcopy_cli.cli.formats import OutputFormat, make_renderer
from tcopy_cli.cli.options import (
    MAX_VALUES,
    AllowReadOpt,
    CodeOpt,
    ColorMode,
    ColorOpt,
    DelayOpt,
    DepthOpt,
    DeviceOpt,
    ExampleOpt,
    ExportOpt,
    FormatOpt,
    FromOpt,
    GraphOpt,
    MaxValuesOpt,
    MemoryOpt,
    NoColorOpt,
    PauseOpt,
    RequireConfinementOpt,
    ScriptArg,
    StepOpt,
    TitleOpt,
    ToOpt,
    TrustOpt,
    WidthOpt,
    readable_paths,
)
from tcopy_cli.cli.present import Presenter, Quit, make_console, show_rejection
from tcopy_cli.cli.source import read_source
from tcopy_cli.errors import ScriptRejected
from tcopy_cli.limits import Limits
from tcopy_cli.printable import printable, printable_record
from tcopy_cli.render import ViewOptions, plural

if TYPE_CHECKING:
    from tcopy_cli.program import Program
    from tcopy_cli.trace.records import RunInfo, RunSummary


@dataclass(frozen=True)
class RunRequest:
    """What to run and how: the script (one of script, code, example) and the run's settings."""

    script: Optional[str] = None
    code: Optional[str] = None
    example: Optional[str] = None
    device: str = "cpu"
    keep_going: bool = False
    max_values: int = MAX_VALUES
    limits: Limits = field(default_factory=Limits)
    trust: bool = False
    """``--trust``: lift the wall (the script runs unconfined)."""
    allow_read: tuple[str, ...] = ()
    """``--allow-read``: what the confined script may read (as given: resolved once the script is known)."""
    require_confinement: bool = False

    @property
    def origin(self) -> str:
        """The label of the script before it is read."""
        if self.example is not None:
            return f"example:{self.example}"
        return self.script or ("<inline>" if self.code is not None else "-")


def _reject(exc: ScriptRejected, source: str, origin: str, fmt: OutputFormat, device: str) -> NoReturn:
    """A refused script: the format's refusal on stdout, the line and a caret on stderr, exit 1."""
    from tcopy_cli.trace.records import RunInfo

    info = getattr(exc, "info", None)  # refused by the worker: it knows torch's version
    if info is None:
        import torch

        info = RunInfo(
            tcopy=__version__,
            torch=torch.__version__,
            device=device,
            source=origin,
            confinement="none (refused before running)",
        )
    if fmt is not OutputFormat.json:  # the file name and the message are the script's text
        info, message = printable_record(info), printable(exc.message)
    else:
        message = exc.message
    make_renderer(fmt, ViewOptions(), make_console(False, None)).rejected(info, exc.line or 1, exc.column or 1, message)
    show_rejection(exc, source)
    raise typer.Exit(EXIT_SCRIPT)


def execute(request: RunRequest, fmt: OutputFormat, view: ViewOptions, presenter: Presenter) -> None:
    """Read and check the script, run it in the confined worker, render each step as it arrives."""
    source, origin = "", request.origin
    if request.trust and request.script is None and request.code is None and request.example is None:
        fail("--trust never runs piped input unless you ask for it: give '-' to trust the script on stdin", EXIT_USAGE)
    if request.trust and request.require_confinement:
        fail("--trust lifts the wall that --require-confinement asks for: give one of them", EXIT_USAGE)
    try:
        source, origin = read_source(request.script, request.code, request.limits, request.example)
        from tcopy_cli.program import parse_program

        # Pure Python: what Python can't parse is refused early, without torch.
        program = parse_program(source, origin, request.limits)
    except ScriptRejected as exc:
        _reject(exc, source, origin, fmt, request.device)
    from tcopy_cli.supervise import WorkerOptions, launch, stop
    from tcopy_cli.trace.records import RunSummary, Step

    options = WorkerOptions(
        device=request.device,
        limits=request.limits,
        keep_going=request.keep_going,
        max_values=request.max_values,
        graph=view.graph,
        trust=request.trust,
        allow_read=readable_paths(list(request.allow_read), origin),
        require_confinement=request.require_confinement,
        printable=fmt is not OutputFormat.json,  # every view but JSON gets the script's text made printable
    )
    # The worker starts first: the views are imported while it confines itself and imports torch.
    proc = launch(program, options)
    try:
        from tcopy_cli.pipeline import run_in_worker
        from tcopy_cli.render.folding import StepFlow

        presenter.begin()
        renderer = make_renderer(fmt, view, presenter.console)
        flow = StepFlow(view, fold=view.fold and fmt is not OutputFormat.json, carry_notes=fmt is not OutputFormat.json)
    except BaseException:
        stop(proc)
        raise
    # What the steps so far add up to (the summary of a run the viewer quits); the steps
    # themselves are not kept.
    seen = {"steps": 0, "errors": 0, "expected": 0, "missing": 0}

    def emit(step: Step) -> None:
        seen["steps"] += 1
        seen["errors"] += step.error is not None
        seen["expected"] += step.expected
        seen["missing"] += step.missed
        for event in flow.feed(step):
            presenter.event(renderer, event)

    try:
        summary = run_in_worker(
            program, options, emit, lambda info: renderer.start(_headed(info, program, fmt)), proc=proc
        )
    except Quit:
        summary = RunSummary(
            seen["steps"], seen["errors"], stopped_by="quit", expected=seen["expected"], missing=seen["missing"]
        )
    except ScriptRejected as exc:
        _reject(exc, source, origin, fmt, request.device)
    if summary.stopped_by != "quit":
        try:
            for event in flow.close(summary):  # turns held back and loops still open when the run ended
                presenter.event(renderer, event)
        except Quit:
            pass
    renderer.end(summary, flow)
    presenter.finish(summary, program.title.partition("\n")[0] or origin)  # an export's title: the first line
    _check_range(view, summary)


def _headed(info: RunInfo, program: Program, fmt: OutputFormat) -> RunInfo:
    """The run's facts with the title a person reads: its paragraphs apart (JSON's title keeps its lines only)."""
    import dataclasses

    from tcopy_cli.printable import printable

    if fmt is OutputFormat.json:
        return info
    return dataclasses.replace(info, title="\n".join(map(printable, program.heading.split("\n"))))


def _check_range(view: ViewOptions, summary: RunSummary) -> None:
    """--step/--from beyond the last step is a usage error, known only once the run is over (exit 2)."""
    if summary.stopped_by == "quit" or view.first is None or view.first <= summary.steps:
        return
    flag = "--step" if view.first == view.last else "--from"
    ran = plural(summary.steps, "step")
    fail(f"{flag} {view.first}: the script ran only {ran}, so nothing was shown", EXIT_USAGE)


def run(
    script: ScriptArg = None,
    code: CodeOpt = None,
    example: ExampleOpt = None,
    device: DeviceOpt = "cpu",
    fmt: FormatOpt = OutputFormat.table,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", "-k", help="After an error step, continue with the next statement.")
    ] = False,
    only_changed: Annotated[
        bool, typer.Option("--only-changed", help="Show only tensors that are new or changed in each step.")
    ] = False,
    watch: Annotated[
        Optional[str],
        typer.Option(
            "--watch",
            "-w",
            metavar="NAMES",
            help="Comma-separated names (a,b): show only these tensors, the steps that touch them and the notes "
            "about them.",
            show_default=False,
        ),
    ] = None,
    all_steps: Annotated[
        bool,
        typer.Option(
            "--all-steps",
            help="Show every step in full, every row too (by default later turns of a loop are one line each, "
            "and three or more rows the step left as the table above showed them fold into one line).",
        ),
    ] = False,
    max_values: MaxValuesOpt = MAX_VALUES,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain/--no-explain",
            help="Show plain-language notes under each table (JSON always has them).",
            rich_help_panel="Presenting",
        ),
    ] = True,
    no_color: NoColorOpt = False,
    color: ColorOpt = ColorMode.auto,
    width: WidthOpt = None,
    pause: PauseOpt = False,
    delay: DelayOpt = 0.0,
    step: StepOpt = None,
    from_step: FromOpt = None,
    to_step: ToOpt = None,
    export: ExportOpt = None,
    title: TitleOpt = None,
    graph: GraphOpt = False,
    depth: DepthOpt = None,
    memory: MemoryOpt = False,
    allow_read: AllowReadOpt = None,
    trust: TrustOpt = False,
    require_confinement: RequireConfinementOpt = False,
    json_refs: Annotated[
        bool,
        typer.Option(
            "--json-refs",
            help="JSON: write a tensor record identical to the last one written for its name as "
            '{"unchanged_since": STEP} (see docs/jsonl-v1.md).',
        ),
    ] = False,
    *,
    limits: Limits,
) -> None:
    """Run a PyTorch script statement by statement and show every tensor after each step.

    Examples:

      tcopy run demo.py

      cat demo.py | tcopy run -

      tcopy run -e "a = torch.ones(2, requires_grad=True); b = a * 3"

      tcopy run demo.py -f json | jq 'select(.event=="step") | .tensors.a'

      tcopy run train.py --allow-read    # it may read files beside it
    """
    if step is not None and (from_step is not None or to_step is not None):
        fail("give either --step N or --from/--to, not both", EXIT_USAGE)
    view = ViewOptions(
        explain=explain,
        only_changed=only_changed,
        watch=tuple(w.strip() for w in watch.split(",") if w.strip()) if watch else None,
        graph=graph,
        memory=memory,
        json_refs=json_refs,
        first=step if step is not None else from_step,
        last=step if step is not None else to_step,
        depth=depth,
        fold=not all_steps,
    )
    console = make_console(no_color, width, record=export is not None, color=color.value)
    presenter = Presenter(console, fmt, pause=pause, delay=delay, export_to=export, title=title)
    request = RunRequest(
        script,
        code,
        example,
        device,
        keep_going,
        max_values,
        limits,
        trust,
        tuple(allow_read or ()),
        require_confinement,
    )
    execute(request, fmt, view, presenter)
