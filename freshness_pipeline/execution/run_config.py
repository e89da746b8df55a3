"""The run contract (METHOD 5.4): resolve and check `(files, cutoff_u)` before Spark starts.

A run of job j gets a list of input files and a cutoff u. It may read only files of j's own
input tables (a security boundary), its cutoff must lie in (t_done, cap] where cap is the
smallest watermark of its inputs, and its files must include every pending file that may
hold an arrival at or before u (otherwise the committed watermark would claim data the run
never read). An empty file list means every pending file; an empty cutoff means the cap.
A selected file that Hudi has since rewritten, cleaned or replaced is resolved to its file
group's current slice, or the table's selection is re-planned if the group is gone.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from freshness_pipeline.catalog.jobs import JobSpec
from freshness_pipeline.hudi.location import Location, LocationError
from freshness_pipeline.hudi.metadata import HudiTableMetadata, PendingFile, TableNotFound
from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.timefmt import iso
from freshness_pipeline.scheduling.units import US_PER_S

# Hudi base file name: <fileId>_<writeToken>_<instant>.parquet
_BASE_FILE = re.compile(r"^(?P<file_id>.+?)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d+)\.parquet$")


class RunConfigError(ValueError):
    """The run config is refused; the message says why and what would be accepted."""


@dataclass(frozen=True)
class ResolvedRun:
    job: str
    t_done_us: int | None
    cutoff_us: int
    cap_us: int
    files: dict[str, tuple[PendingFile, ...]]  # input table -> file slices to read
    pending_files: int  # pending input files at planning time, all inputs
    pending_bytes: int
    resolved_moves: tuple[tuple[str, str], ...] = ()  # (given path, current slice path)
    replanned_tables: tuple[str, ...] = ()
    nothing_to_do: str = ""  # non-empty: why the run has nothing to do

    @property
    def file_count(self) -> int:
        return sum(len(v) for v in self.files.values())

    @property
    def scan_bytes(self) -> int:
        return sum(p.slice.size_bytes for v in self.files.values() for p in v)


@dataclass
class _Inputs:
    meta: dict[str, HudiTableMetadata] = field(default_factory=dict)
    watermark: dict[str, int] = field(default_factory=dict)

    def cap(self, job: str) -> int:
        """The job's cap: its lowest input watermark (_read_inputs refused an input
        without one)."""
        cap = input_cap(self.watermark.values())
        if cap is None:
            raise RunConfigError(f"{job} cannot run: it declares no input table")
        return cap


def parse_cutoff(value: str | int | None) -> int | None:
    """Epoch microseconds, or an ISO-8601 time (UTC unless it names a zone)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, int):
        return value
    text = value.strip()
    if re.fullmatch(r"\d+", text):
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise RunConfigError(
            f"cutoff_u {value!r} is neither epoch microseconds nor an ISO-8601 time"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * US_PER_S + delta.microseconds


__all__ = ["iso"]  # re-exported: run configs and metadata print times this way


def _norm(path: str) -> str:
    """A given path or URI in the lakehouse's own spelling, so it compares with table roots
    (a `..` is resolved away before the check, never after)."""
    try:
        return Location.parse(path).spark
    except LocationError as exc:
        raise RunConfigError(f"{path} is not a file this project can read: {exc}") from exc


def resolve_run(
    spec: JobSpec,
    files: Sequence[str],
    cutoff_u: str | int | None,
    table_meta: Callable[[str], HudiTableMetadata],
) -> ResolvedRun:
    """Checks a run config against the tables' metadata; raises RunConfigError if refused."""
    cutoff = parse_cutoff(cutoff_u)
    t_done, inputs = _read_inputs(spec, table_meta)
    checked = _check_files(spec, files, inputs)
    cap = inputs.cap(spec.name)
    u = _check_cutoff(spec, cutoff, t_done, inputs)
    pending = {t: inputs.meta[t].pending_files(t_done) for t in spec.inputs}
    pending_count = sum(len(v) for v in pending.values())
    pending_bytes = sum(p.slice.size_bytes for v in pending.values() for p in v)
    needed = {
        t: {p.slice.file_id: p for p in v if p.pending_min_us <= u} for t, v in pending.items()
    }
    if t_done is not None and u <= t_done:
        return ResolvedRun(
            spec.name,
            t_done,
            u,
            cap,
            {t: () for t in spec.inputs},
            pending_count,
            pending_bytes,
            nothing_to_do=f"t_done {iso(t_done)} already at the inputs' watermark {iso(cap)}",
        )
    if not files:
        chosen = {t: _by_uri(v.values()) for t, v in needed.items()}
        return ResolvedRun(spec.name, t_done, u, cap, chosen, pending_count, pending_bytes)
    selected, moves, replanned = _select(checked, inputs, pending)
    for table in replanned:
        selected[table].update(needed[table])
    missing = [p.uri for t in spec.inputs for fid, p in needed[t].items() if fid not in selected[t]]
    if missing:
        raise RunConfigError(
            f"the file list leaves out {len(missing)} pending file(s) that may hold arrivals at "
            f"or before cutoff_u {iso(u)}, e.g. {missing[0]}; add them or lower cutoff_u"
        )
    chosen = {t: _by_uri(v.values()) for t, v in selected.items()}
    return ResolvedRun(
        spec.name,
        t_done,
        u,
        cap,
        chosen,
        pending_count,
        pending_bytes,
        tuple(moves),
        tuple(sorted(replanned)),
    )


def _by_uri(files) -> tuple[PendingFile, ...]:
    return tuple(sorted(files, key=lambda p: p.uri))


def _read_inputs(
    spec: JobSpec, table_meta: Callable[[str], HudiTableMetadata]
) -> tuple[int | None, _Inputs]:
    """The target's watermark and every input's metadata and watermark; a missing input or
    dimension table, or an input with no watermark yet, refuses the run by name."""
    try:
        t_done = table_meta(spec.name).watermark_us()
    except TableNotFound:
        t_done = None
    inputs = _Inputs()
    for table in spec.inputs:
        try:
            meta = table_meta(table)
        except TableNotFound as exc:
            raise RunConfigError(
                f"{spec.name} cannot run: input table {table} does not exist ({exc})"
            ) from exc
        watermark = meta.watermark_us()
        if watermark is None:
            raise RunConfigError(
                f"{spec.name} cannot run: input table {table} has no watermark yet"
            )
        inputs.meta[table], inputs.watermark[table] = meta, watermark
    for table in spec.dimensions:
        try:
            table_meta(table)
        except TableNotFound as exc:
            raise RunConfigError(
                f"{spec.name} cannot run: table {table} does not exist ({exc})"
            ) from exc
    return t_done, inputs


def _check_cutoff(spec: JobSpec, cutoff: int | None, t_done: int | None, inputs: _Inputs) -> int:
    """The run's cutoff u: the given one if it lies in (t_done, cap], else refused; the cap
    (smallest input watermark) when none is given."""
    cap = inputs.cap(spec.name)
    floor = -1 if t_done is None else t_done
    if cutoff is not None and cutoff <= floor:
        raise RunConfigError(
            f"cutoff_u {iso(cutoff)} is at or below {spec.name}'s t_done {iso(t_done)}; "
            "a run must move the watermark forward"
        )
    if cutoff is not None and cutoff > cap:
        raise RunConfigError(
            f"cutoff_u {iso(cutoff)} is above what the inputs hold: the smallest input "
            f"watermark is {iso(cap)} ("
            + ", ".join(f"{t} {iso(w)}" for t, w in inputs.watermark.items())
            + ")"
        )
    return cutoff if cutoff is not None else cap


def _select(checked, inputs: _Inputs, pending: dict[str, list[PendingFile]]):
    """The given files mapped to their groups' pending slices: (selected per table, moved
    files as (given, current), tables whose selected group was replaced)."""
    selected: dict[str, dict[str, PendingFile]] = {t: {} for t in pending}
    pending_by_id = {t: {p.slice.file_id: p for p in v} for t, v in pending.items()}
    moves: list[tuple[str, str]] = []
    replanned: set[str] = set()
    for given, table, file_id in checked:
        meta = inputs.meta[table]
        latest = meta.latest_slice(file_id)
        if latest is None:
            # The group was replaced (clustering, overwrite): plan this table afresh.
            replanned.add(table)
            continue
        current = meta.file_uri(latest.path)
        if _norm(current) != _norm(given):
            moves.append((given, current))
        pend = pending_by_id[table].get(file_id)
        if pend is not None:
            selected[table][file_id] = pend
        # A file with nothing pending adds nothing; reading it would only cost time.
    return selected, moves, replanned


def _check_files(spec: JobSpec, files: Sequence[str], inputs: _Inputs):
    """Every given path must be a Hudi base file of one of the job's input tables whose file
    group the table knows (current, or named by a retained commit). Checked first, so a
    bad path is refused even when the run would have nothing to do."""
    roots = {t: _norm(inputs.meta[t].table_uri) for t in spec.inputs}
    checked = []
    for given in files:
        path = _norm(given)
        table = next((t for t, root in roots.items() if path.startswith(root + "/")), None)
        if table is None:
            raise RunConfigError(
                f"{given} is not a file of {spec.name}'s input tables "
                f"({', '.join(spec.inputs)}); a run may read nothing else"
            )
        match = _BASE_FILE.match(posixpath.basename(path))
        if match is None or ".hoodie" in path[len(roots[table]) :].split("/"):
            raise RunConfigError(f"{given} is not a Hudi base file of {table}")
        file_id = match.group("file_id")
        meta = inputs.meta[table]
        # Groups an active commit wrote (current or replaced since) are known from commit
        # metadata; only an older group costs a listing of the whole table.
        known = meta.latest_slice(file_id) is not None or file_id in meta.replaced_file_ids()
        if not known:
            raise RunConfigError(f"{given} is not a current or retained file of {table}")
        checked.append((given, table, file_id))
    return checked
