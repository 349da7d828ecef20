"""The campaign file: TOML validated once at the boundary, then resolved into a plan.

A campaign file names a server command template, a benchmark, and the variants to
compare with the baseline. Every mistake in it is found before anything is launched and
reported as one ``ConfigError`` sentence that names the file, the line or key, and the
fix; after ``load_campaign`` returns, the runner works only with plain frozen values.

    campaign = load_campaign(Path("fusion.toml"))
    for group in campaign.groups:          # variants that share one server start
        argv, env = group.render(port=30000)
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
import shlex
import shutil
import string
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from servegate.bench import DatasetSpec, Target, parse_dataset, parse_target, spec_from_table
from servegate.campaign.locate import key_line, variant_line
from servegate.campaign.schema import (
    BenchOverride,
    BenchTable,
    CampaignFile,
    MatrixTable,
    Scalar,
    ServerTable,
    VariantTable,
    config_error,
    name_problem,
    percentage,
)
from servegate.engines import ENGINE_NAMES, get_profile
from servegate.errors import ConfigError, UsageError

__all__ = [
    "BUILTIN_PLACEHOLDERS",
    "SEARCH_LABEL",
    "BenchPlan",
    "Campaign",
    "LoadPoint",
    "SearchPlan",
    "ServerGroup",
    "Variant",
    "check_programs",
    "load_campaign",
    "missing_programs",
    "parse_campaign",
]

BUILTIN_PLACEHOLDERS = ("host", "model", "port", "python")
MAX_FILE_BYTES = 1 << 20  # campaign files are a few KiB; a larger one is not a campaign
MAX_DEPTH = 8  # tables and arrays; the deepest key, variant[i].bench.concurrency[j], is 5
LOCAL_ADDRESS = "127.0.0.1"  # {host}: where the runner reaches a local server

# --- the resolved plan, as frozen values -------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadPoint:
    """One load level: at most ``concurrency`` requests in flight (None: no cap, under a
    rate), sent at ``rate``/s."""

    concurrency: int | None
    rate: float | None
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchPlan:
    """``find_max`` in ``[bench]``: each start searches for the largest load that meets
    ``[slo]`` (the probes of ``bench --find-max``) between ``low`` and ``high``."""

    over: str  # "concurrency" or "rate"
    low: float
    high: float
    max_probes: int
    precision: float  # a share of the bracket's low end
    requests: int | None  # per concurrency probe; None: max(200, 4 x c)
    duration_s: float  # measured seconds per rate probe
    retry_below_crash: bool  # a crash while probing: search on below it on a new server
    warmup: int | None = None  # per probe; None: the probe's concurrency, at most 64


SEARCH_LABEL = "find-max"  # the load point of a search: one per variant and start


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchPlan:
    """The benchmark settings of one variant, with its load points in order."""

    api: str
    points: tuple[LoadPoint, ...]
    requests: int
    duration_s: float | None
    warmup: int
    input_len: int
    output_len: int | None  # None: each request's from the dataset, without ignore_eos
    dataset: str  # the one-line form (`servegate.bench.spec`), files as absolute paths
    repeats: int
    seed: int
    burstiness: float = 1.0  # the gamma shape of the gaps between arrivals: 1 is Poisson
    percentiles: tuple[float, ...] = ()  # latency percentiles stored beside p50, p90, p99
    cache: str = "isolate"  # isolate: each point's prompts salted by (repeat, point)
    tokenizer: str | None = None  # "server", an absolute tokenizer.json path, or None
    slo: tuple[Target, ...] = ()  # [slo]: the targets every point is held to
    attainment: float | None = None  # [slo] attainment: the share that decides met
    price_per_gpu_hour: float | None = None  # $ per GPU-hour: each point's cost
    search: SearchPlan | None = None  # find_max: the answer is the capacity per start


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """One variant: the command and environment templates, and its benchmark."""

    name: str
    description: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    values: tuple[tuple[str, str], ...]
    bench: BenchPlan

    def render(self, *, port: int | str) -> tuple[list[str], dict[str, str]]:
        """The argument list and environment with every placeholder filled in (``port``:
        a number, or a text that stands for one, as ``--dry-run`` shows an auto port)."""
        values = dict(self.values, port=str(port))
        argv = [_fill(token, values) for token in self.command]
        env = {key: _fill(value, values) for key, value in self.env}
        return argv, env


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerGroup:
    """Variants whose final command and environment are identical: one server start."""

    key: str
    variants: tuple[Variant, ...]

    def render(self, *, port: int | str) -> tuple[list[str], dict[str, str]]:
        """The command and environment of the group's server on ``port``."""
        return self.variants[0].render(port=port)


@dataclass(frozen=True, slots=True, kw_only=True)
class Campaign:
    """A validated campaign: what the runner executes."""

    name: str
    baseline: str
    description: str
    path: Path | None
    text: str
    engine: str
    host: str
    port: int | None  # None: a free port is picked for each start
    model: str | None
    cwd: str | None
    timeout_s: float
    stall_s: float | None
    stop_grace_s: float
    release_timeout_s: float
    ready: tuple[str, ...]  # extra ready-line regexes for the gate
    crash: tuple[str, ...]  # extra fatal-line regexes for the gate
    health_url: str | None  # template of the URL the gate probes; None: the profile's
    values: tuple[tuple[str, str], ...]  # campaign-wide placeholders (no variant vars)
    variants: tuple[Variant, ...]
    groups: tuple[ServerGroup, ...]
    restarts: int = 1  # server starts per configuration ([bench] restarts)
    seed: int = 0  # [bench] seed: the prompts, and the order of the starts
    min_effect: float | None = None  # [campaign] min_effect as a fraction; None: 1 %
    ray: str | None = None  # [cluster] ray: the Ray cluster's address; None: run here
    gpus: int = 0  # [server] gpus: GPUs one server needs on a cluster node
    resources: tuple[tuple[str, float], ...] = ()  # [server] resources: custom, per server

    def probe_url(self, *, port: int) -> str | None:
        """The health URL for a server on ``port``, or None for the profile's probe."""
        if self.health_url is None:
            return None
        return _fill(self.health_url, dict(self.values, port=str(port)))

    def variant(self, name: str) -> Variant:
        """The variant called ``name``."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise KeyError(name)

    def only(self, names: Sequence[str]) -> Campaign:
        """This campaign restricted to the variants ``names`` (``--only``)."""
        known = [variant.name for variant in self.variants]
        for name in names:
            if name not in known:
                raise UsageError(
                    f"--only {name}: no such variant in campaign {self.name!r}; "
                    f"choose from {', '.join(known)}."
                )
        wanted = set(names)
        groups = []
        for group in self.groups:
            kept = tuple(v for v in group.variants if v.name in wanted)
            if kept:
                groups.append(ServerGroup(key=group.key, variants=kept))
        return dataclasses.replace(
            self,
            variants=tuple(v for v in self.variants if v.name in wanted),
            groups=tuple(groups),
        )


# --- loading -----------------------------------------------------------------------------


def missing_programs(campaign: Campaign) -> list[tuple[Variant, str]]:
    """The variants whose program cannot be found on this machine, with that program."""
    missing = []
    for variant in campaign.variants:
        argv, env = variant.render(port=0)
        program = argv[0] if argv else ""
        search = env.get("PATH", os.environ.get("PATH"))
        if os.sep in program:
            base = campaign.cwd or os.getcwd()
            found = os.access(os.path.join(base, os.path.expanduser(program)), os.X_OK)
        else:
            found = bool(program) and shutil.which(program, path=search) is not None
        if not found:
            missing.append((variant, program))
    return missing


def check_programs(campaign: Campaign) -> None:
    """Refuse, before anything starts, a variant whose program cannot be found."""
    where = str(campaign.path or "the campaign file")
    for variant, program in missing_programs(campaign)[:1]:
        raise ConfigError(
            f"{where}: variant {variant.name!r}: program {program!r} not found"
            + ("" if os.sep in program else " on PATH")
            + "; install it or give its full path in the command.",
            path=where,
            key=f"variant.{variant.name}.command",
        )


def load_campaign(path: Path) -> Campaign:
    """Read and validate the campaign file at ``path``.

    Raises:
        ConfigError: one sentence naming the file, the line or key, and the fix.
    """
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _too_big(str(path), size)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such campaign file; check the path (servegate demo writes an example).",
            path=str(path),
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot read the campaign file ({exc}).", path=str(path)
        ) from exc
    return parse_campaign(text, path=path)


def parse_campaign(text: str, *, path: Path | None = None) -> Campaign:
    """Validate campaign ``text`` (read from ``path``, which error messages name)."""
    where = str(path) if path is not None else "<campaign>"
    if len(text) > MAX_FILE_BYTES:
        raise _too_big(where, len(text.encode("utf-8", "replace")))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{where}: TOML syntax error: {exc}; fix that line (https://toml.io has the syntax).",
            path=where,
        ) from None
    except RecursionError:
        raise _too_deep(where, None) from None
    _check_depth(data, where)
    try:
        model = CampaignFile.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, data, text, where) from None
    return _resolve(model, text=text, path=path, where=where)


def _resolve(model: CampaignFile, *, text: str, path: Path | None, where: str) -> Campaign:
    """The checked campaign of a validated file: every cross-key mistake raised here."""
    server = model.server
    engine = _check_server(server, where, text)
    tables = _variant_tables(model, where, text)
    builtins, campaign_vars = _campaign_values(model, where, text)
    template = _split(server.command, where, "server.command")
    variants = [
        _variant(
            table,
            model,
            template=template,
            builtins=builtins,
            campaign_vars=campaign_vars,
            where=where,
            path=path,
        )
        for table in tables
    ]
    variants.sort(key=lambda v: v.name != model.campaign.baseline)  # baseline first, stable
    port = server.port if isinstance(server.port, int) else None
    if server.port is None:
        port = _default_port(engine)
    return Campaign(
        name=model.campaign.name,
        baseline=model.campaign.baseline,
        description=model.campaign.description,
        path=path,
        text=text,
        engine=engine,
        host=server.host,
        port=port,
        model=server.model,
        cwd=server.cwd,
        timeout_s=server.timeout_s,
        stall_s=server.stall_s,
        stop_grace_s=server.stop_grace_s,
        release_timeout_s=server.release_timeout_s,
        ready=tuple(server.ready),
        crash=tuple(server.crash),
        health_url=server.health_url,
        values=tuple(sorted({**builtins, **campaign_vars}.items())),
        variants=tuple(variants),
        groups=_server_groups(variants, port),
        restarts=model.bench.restarts,
        seed=model.bench.seed,
        min_effect=None
        if model.campaign.min_effect is None
        else percentage(model.campaign.min_effect),
        ray=None if model.cluster is None else model.cluster.ray,
        gpus=server.gpus,
        resources=tuple(sorted((k, float(v)) for k, v in server.resources.items())),
    )


def _check_server(server: ServerTable, where: str, text: str) -> str:
    """The engine's name; ConfigError for an unknown engine or a host that is not one."""
    from servegate.remote import is_local, parse_host

    engine = _check_engine(server.engine, where, text)
    if not is_local(server.host):
        try:
            parse_host(server.host)
        except UsageError:
            raise ConfigError(
                f"{where}{key_line(text, 'server', 'host')}: [server] host = {server.host!r} "
                'is not a host: write "ssh://[user@]host[:port]", a Host alias of '
                '~/.ssh/config, or "local".',
                path=where,
                key="server.host",
            ) from None
    return engine


def _variant_tables(model: CampaignFile, where: str, text: str) -> list[VariantTable]:
    """The [[variant]] tables and the [matrix]'s, uniquely named, the baseline among them."""
    tables = list(model.variant) + _expand_matrix(model.matrix, where)
    if not tables:
        raise ConfigError(
            f"{where}: the campaign has no variants; add a [[variant]] table "
            f"(name = {model.campaign.baseline!r}) or a [matrix].",
            path=where,
            key="variant",
        )
    seen: set[str] = set()
    for table in tables:
        if table.name in seen:
            line = variant_line(text, table.name, nth=2)
            raise ConfigError(
                f"{where}{line}: two variants are named {table.name!r}; "
                "give each variant a unique name.",
                path=where,
                key=f"variant.{table.name}",
            )
        seen.add(table.name)
    if model.campaign.baseline not in seen:
        raise ConfigError(
            f"{where}{key_line(text, 'campaign', 'baseline')}: baseline = "
            f"{model.campaign.baseline!r} names no variant; set [campaign] baseline to one of "
            f"{', '.join(repr(table.name) for table in tables)}.",
            path=where,
            key="campaign.baseline",
        )
    return tables


def _campaign_values(
    model: CampaignFile, where: str, text: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The built-in placeholders and the [vars]; the server's patterns and health URL checked."""
    server = model.server
    builtins = {"python": sys.executable, "host": LOCAL_ADDRESS}
    if server.model is not None:
        builtins["model"] = server.model
    campaign_vars = {key: _scalar(value) for key, value in model.vars.items()}
    for key in campaign_vars:
        if key in BUILTIN_PLACEHOLDERS:
            raise ConfigError(
                f"{where}: [vars] {key} would hide the built-in placeholder {{{key}}}; rename it.",
                path=where,
                key=f"vars.{key}",
            )
    for key, patterns in (("ready", server.ready), ("crash", server.crash)):
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(
                    f"{where}{key_line(text, 'server', key)}: [server] {key} {pattern!r} is not "
                    f"a regular expression ({exc}); fix it (escape ( [ . with a backslash).",
                    path=where,
                    key=f"server.{key}",
                ) from None
    if server.health_url is not None:
        values = {**builtins, **campaign_vars}
        _check_placeholders(server.health_url, values, where, "[server] health_url")
    return builtins, campaign_vars


def _variant(
    table: VariantTable,
    model: CampaignFile,
    *,
    template: list[str],
    builtins: dict[str, str],
    campaign_vars: dict[str, str],
    where: str,
    path: Path | None,
) -> Variant:
    """One variant: its command, environment and placeholders checked, its bench plan."""
    label = f"variant {table.name!r}"
    slo, attainment = slo_of(model.slo, where)
    for key in table.vars:
        if key in BUILTIN_PLACEHOLDERS:
            raise ConfigError(
                f"{where}: {label} vars {key} would hide the built-in placeholder "
                f"{{{key}}}; rename it.",
                path=where,
                key=f"variant.{table.name}.vars.{key}",
            )
    values = {**builtins, **campaign_vars, **{k: _scalar(v) for k, v in table.vars.items()}}
    command = (
        _split(table.command, where, f"{label} command")
        if table.command is not None
        else list(template)
    )
    if not command:
        raise ConfigError(
            f"{where}: {label}: the command is empty; set [server] command "
            "(or the variant's command) to the server's command line.",
            path=where,
            key="server.command",
        )
    command += table.args if isinstance(table.args, list) else _split(table.args, where, label)
    env = {k: _scalar(v) for k, v in model.server.env.items()}
    env.update({k: _scalar(v) for k, v in table.env.items()})
    for token in command:
        _check_placeholders(token, values, where, f"{label} command/args")
    for key, value in env.items():
        _check_placeholders(value, values, where, f"{label} env {key}")
    plan = _bench_plan(model.bench, table.bench, where, table.name, base_dir=_base_dir(path))
    if plan.search is not None and not slo:
        raise ConfigError(
            f'{where}: [bench] find_max = "{plan.search.over}" searches for the largest load '
            'that meets [slo]; add [slo] with a target such as ttft_p99 = "500ms".',
            path=where,
            key="bench.find_max",
        )
    return Variant(
        name=table.name,
        description=table.description,
        command=tuple(command),
        env=tuple(sorted(env.items())),
        values=tuple(sorted(values.items())),
        bench=dataclasses.replace(plan, slo=slo, attainment=attainment),
    )


def _server_groups(variants: list[Variant], port: int | None) -> tuple[ServerGroup, ...]:
    """Variants whose final command and environment are equal share one server start."""
    groups: dict[str, list[Variant]] = {}
    for variant in variants:
        argv, env = variant.render(port=port if port is not None else 0)
        groups.setdefault(_group_key(argv, env), []).append(variant)
    return tuple(ServerGroup(key=key, variants=tuple(vs)) for key, vs in groups.items())


def _expand_matrix(matrix: MatrixTable | None, where: str) -> list[VariantTable]:
    """One variant per combination of the axes' values, named from the ``name`` template."""
    if matrix is None:
        return []
    if not matrix.axes or any(not values for values in matrix.axes.values()):
        raise ConfigError(
            f"{where}: [matrix.axes] needs at least one axis with at least one value, "
            'e.g. backend = ["flashinfer", "triton"].',
            path=where,
            key="matrix.axes",
        )
    count = math.prod(len(values) for values in matrix.axes.values())
    if count > matrix.max_variants:
        raise ConfigError(
            f"{where}: [matrix] expands to {count} variants, more than the cap of "
            f"{matrix.max_variants}; remove axis values, or set [matrix] max_variants = {count} "
            "if you mean to run them all.",
            path=where,
            key="matrix.max_variants",
        )
    names = list(matrix.axes)
    for name in names:
        if name in BUILTIN_PLACEHOLDERS:
            raise ConfigError(
                f"{where}: [matrix.axes] {name} would hide the built-in placeholder "
                f"{{{name}}}; rename the axis.",
                path=where,
                key=f"matrix.axes.{name}",
            )
    tables = []
    for combo in itertools.product(*(matrix.axes[name] for name in names)):
        values: dict[str, Scalar] = {
            name: _scalar(value) for name, value in zip(names, combo, strict=True)
        }
        if matrix.name is not None:
            for field in _fields(matrix.name, where, "matrix.name"):
                if field not in values:
                    raise ConfigError(
                        f"{where}: [matrix] name uses {{{field}}}, which is not an axis; "
                        f"use one of {', '.join('{' + n + '}' for n in names)}.",
                        path=where,
                        key="matrix.name",
                    )
            name = _fill(matrix.name, {k: str(v) for k, v in values.items()})
        else:
            name = ",".join(f"{axis}={value or 'none'}" for axis, value in values.items())
        problem = name_problem(name)
        if problem is not None:
            raise ConfigError(
                f"{where}: [matrix] makes the variant name {name!r}: {problem} "
                "(in the axes' values or the name template).",
                path=where,
                key="matrix.name",
            )
        tables.append(
            VariantTable(
                name=name,
                args=matrix.args,
                env=matrix.env,
                command=matrix.command,
                vars=dict(values),
            )
        )
    return tables


def _too_big(where: str, size: int) -> ConfigError:
    return ConfigError(
        f"{where}: the file is {size / 2**20:.1f} MiB, more than the "
        f"{MAX_FILE_BYTES // 2**20} MiB a campaign file may have; a campaign lists variants "
        "and settings (prompts belong in a bench dataset file).",
        path=where,
    )


def _too_deep(where: str, key: str | None) -> ConfigError:
    at = f" at {key}" if key else ""
    return ConfigError(
        f"{where}: values nest more than {MAX_DEPTH} levels deep{at}; campaign values are "
        "tables of strings, numbers and lists of them: flatten that value.",
        path=where,
        key=key,
    )


def _check_depth(data: dict[str, object], where: str) -> None:
    """Refuse tables and arrays nested deeper than any campaign key goes (no recursion)."""
    stack: list[tuple[object, int, str]] = [(data, 0, "")]
    while stack:
        node, depth, key = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(where, re.sub(r"(\[\d+\])+$", "", key) or None)
        if isinstance(node, dict):
            stack.extend(
                (value, depth + 1, f"{key}.{name}" if key else str(name))
                for name, value in node.items()
            )
        elif isinstance(node, list):
            stack.extend((value, depth + 1, f"{key}[{i + 1}]") for i, value in enumerate(node))


def _base_dir(path: Path | None) -> Path:
    """The folder that relative paths in a campaign file are taken from."""
    return path.resolve().parent if path is not None else Path.cwd()


def _dataset(value: str | dict[str, Any], base_dir: Path, where: str, variant: str) -> DatasetSpec:
    """The dataset of ``[bench] dataset`` (one line) or ``[bench.dataset]`` (a table), its
    file made absolute and checked to exist."""
    at = f"{where}: variant {variant!r}: bench dataset"

    def here(match: re.Match[str]) -> str:
        """A length distribution's file:PATH, taken from the campaign file's folder."""
        path = Path(match.group(2)).expanduser()
        key = match.group(1) or ""
        return f"{key}file:{path if path.is_absolute() else base_dir / path}"

    lengths = re.compile(r"^((?:input|output)=)?file:(.+)$")
    try:
        if isinstance(value, dict):
            value = {
                k: lengths.sub(here, v) if k in ("input", "output") and isinstance(v, str) else v
                for k, v in value.items()
            }
            spec = spec_from_table(value, f"{where} [bench.dataset]")
        else:
            line = re.sub(r"((?:input|output)=)file:([^,]+)", here, value)
            spec = parse_dataset(line, at)
    except UsageError as exc:
        raise ConfigError(str(exc), path=where, key="bench.dataset") from None
    if spec.file is None:
        return spec
    file = Path(spec.file).expanduser()
    file = file if file.is_absolute() else base_dir / file
    if not file.is_file():
        raise ConfigError(
            f"{at} {spec.file!r}: no such file {file}; give a JSONL file, sharegpt:FILE, "
            'trace:FILE, or dataset = "random".',
            path=where,
            key="bench.dataset",
        )
    return replace(spec, file=str(file))


def _output_len(given: int | None, spec: DatasetSpec) -> int | None:
    """max_tokens: as given; 256 for generated prompts; a file's or trace's own lengths."""
    if given is not None:
        return given
    return 256 if spec.kind in ("random", "prefix", "multiturn", "agentic") else None


def _dataset_text(spec: DatasetSpec, value: str | dict[str, Any]) -> str:
    """The one-line form stored with each point; a bare JSONL path stays a bare path, so
    older rows of the same file still compare."""
    if spec.kind == "jsonl" and isinstance(value, str) and not value.startswith("jsonl:"):
        return str(spec.file)
    return spec.text


def slo_of(
    table: Mapping[str, str | float] | None, where: str
) -> tuple[tuple[Target, ...], float | None]:
    """``[slo]``'s targets (``ttft_p99 = "500ms"``) and its ``attainment``, checked with
    the grammar of ``bench --slo``."""
    if not table:
        return (), None
    targets: list[Target] = []
    attainment: float | None = None
    for key, value in table.items():
        if key == "attainment":
            if isinstance(value, str) or not 0 < value <= 1:
                raise ConfigError(
                    f"{where}: [slo] attainment must be a share above 0 and at most 1, "
                    "e.g. attainment = 0.95.",
                    path=where,
                    key="slo.attainment",
                )
            attainment = float(value)
            continue
        if not isinstance(value, str):
            raise ConfigError(
                f"{where}: [slo] {key} must be a bound with its unit in quotes, "
                f'e.g. {key} = "500ms".',
                path=where,
                key=f"slo.{key}",
            )
        try:
            targets.append(parse_target(f"{key}<={value}", where=f"{where}: [slo]"))
        except UsageError as exc:
            raise ConfigError(str(exc), path=where, key=f"slo.{key}") from None
    if not targets:
        raise ConfigError(
            f'{where}: [slo] names no target; add one such as ttft_p99 = "500ms".',
            path=where,
            key="slo",
        )
    return tuple(targets), attainment


def _bench_plan(
    base: BenchTable,
    override: BenchOverride | None,
    where: str,
    variant: str,
    *,
    base_dir: Path,
) -> BenchPlan:
    merged = base.model_dump()
    if override is not None:
        merged.update(override.model_dump(exclude_none=True))
    concurrency = merged["concurrency"]
    rate = merged["rate"]
    spec = _dataset(merged["dataset"], base_dir, where, variant)
    trace = spec.kind == "trace"
    if trace and rate is not None:
        raise ConfigError(
            f"{where}: variant {variant!r}: bench rate cannot go with a trace dataset, whose "
            "rows are the schedule; remove rate (speed = N compresses the trace's time).",
            path=where,
            key="bench.rate",
        )
    if spec.kind in ("multiturn", "agentic") and merged["duration_s"] is not None:
        raise ConfigError(
            f"{where}: variant {variant!r}: a {spec.kind} dataset runs whole sessions, counted "
            "by requests; remove duration_s.",
            path=where,
            key="bench.duration_s",
        )
    rates: list[float | None] = (
        [None] if rate is None else [float(rate)] if isinstance(rate, int | float) else list(rate)
    )
    # the default cap, as bench's: c=1 without a rate, none under a rate or a trace
    concurrencies: list[int | None] = (
        ([1] if rate is None and not trace else [None])
        if concurrency is None
        else [concurrency]
        if isinstance(concurrency, int)
        else list(concurrency)
    )
    if not concurrencies or any(c is not None and c < 1 for c in concurrencies):
        raise ConfigError(
            f"{where}: variant {variant!r}: bench concurrency must be a list of integers >= 1, "
            "e.g. concurrency = [1, 16, 64].",
            path=where,
            key="bench.concurrency",
        )
    if not rates or any(r is not None and r <= 0 for r in rates):
        raise ConfigError(
            f"{where}: variant {variant!r}: bench rate must be a list of requests per second "
            "> 0, e.g. rate = [2.0, 8.0].",
            path=where,
            key="bench.rate",
        )
    search = _search_plan(base, merged, where, rates, concurrency, trace=trace)
    if search is not None:
        return BenchPlan(
            api=merged["api"],
            points=(LoadPoint(concurrency=None, rate=None, label=SEARCH_LABEL),),
            requests=merged["requests"],
            duration_s=None,
            warmup=merged["warmup"],
            input_len=merged["input_len"],
            output_len=_output_len(merged["output_len"], spec),
            dataset=_dataset_text(spec, merged["dataset"]),
            repeats=1,  # one search per start; its probes are the points
            seed=merged["seed"],
            burstiness=merged["burstiness"],
            percentiles=_percentiles(merged["percentiles"], where, variant),
            cache=merged["cache"],
            tokenizer=_tokenizer(merged["tokenizer"], base_dir),
            price_per_gpu_hour=merged["price_per_gpu_hour"],
            search=search,
        )
    points = tuple(
        LoadPoint(concurrency=c, rate=r, label=_load_label(c, r, capped=len(concurrencies) > 1))
        for r in rates
        for c in concurrencies
    )
    if len({p.label for p in points}) != len(points):
        raise ConfigError(
            f"{where}: variant {variant!r}: bench concurrency or rate lists a value twice; "
            "list each load level once.",
            path=where,
            key="bench.concurrency",
        )
    return BenchPlan(
        api=merged["api"],
        points=points,
        requests=merged["requests"],
        duration_s=merged["duration_s"],
        warmup=merged["warmup"],
        input_len=merged["input_len"],
        output_len=_output_len(merged["output_len"], spec),
        dataset=_dataset_text(spec, merged["dataset"]),
        repeats=merged["repeats"],
        seed=merged["seed"],
        burstiness=merged["burstiness"],
        percentiles=_percentiles(merged["percentiles"], where, variant),
        cache=merged["cache"],
        tokenizer=_tokenizer(merged["tokenizer"], base_dir),
        price_per_gpu_hour=merged["price_per_gpu_hour"],
    )


def _search_plan(
    base: BenchTable,
    merged: dict[str, Any],
    where: str,
    rates: list[float | None],
    concurrency: Any,
    *,
    trace: bool,
) -> SearchPlan | None:
    """``find_max`` and its knobs, checked; None without ``find_max``."""
    over = merged["find_max"]
    knobs = ("max_probes", "precision", "max_concurrency", "max_rate", "retry_below_crash")
    if over is None:
        given = [k for k in knobs if k in base.model_fields_set]
        if given:
            raise ConfigError(
                f"{where}: [bench] {given[0]} tunes the capacity search; add find_max = "
                f'"concurrency" (or "rate"), or remove {given[0]}.',
                path=where,
                key=f"bench.{given[0]}",
            )
        return None

    def bad(key: str, text: str) -> ConfigError:
        return ConfigError(f"{where}: [bench] {text}", path=where, key=f"bench.{key}")

    if over not in ("concurrency", "rate"):
        raise bad("find_max", f'find_max must be "concurrency" or "rate", not {over!r}.')
    if trace:
        raise bad("find_max", "find_max cannot go with a trace dataset, whose rows are the "
                  "schedule; use a random or file dataset.")  # fmt: skip
    if merged["max_probes"] < 2 or merged["max_probes"] > 100:
        raise bad("max_probes", "max_probes must be a whole number from 2 to 100, e.g. 15.")
    precision = _share(merged["precision"])
    if precision is None:
        raise bad("precision", 'precision must be a share above 0 and below 1 (0.05) or a '
                  'percentage ("5%").')  # fmt: skip
    cap, top = merged["max_concurrency"], merged["max_rate"]
    if over == "concurrency":
        if rates != [None] or top is not None:
            raise bad("find_max", 'find_max = "concurrency" runs closed-loop probes; remove '
                      "rate and max_rate.")  # fmt: skip
        if merged["duration_s"] is not None:
            raise bad("duration_s", "concurrency probes are bound by a request count; remove "
                      "duration_s (requests sets each probe's count).")  # fmt: skip
        if cap is not None and cap < 1:
            raise bad("max_concurrency", "max_concurrency must be a whole number >= 1, e.g. 256.")
        levels = (
            [] if concurrency is None else [concurrency] if isinstance(concurrency, int)
            else list(concurrency)
        )  # fmt: skip
        low = float(min(levels)) if levels else 1.0
        high = float(cap) if cap is not None else float(max(levels)) if len(levels) > 1 else 512.0
        requests = merged["requests"] if "requests" in base.model_fields_set else None
        duration = 30.0
    else:
        if concurrency is not None or cap is not None:
            raise bad("find_max", 'find_max = "rate" lifts the concurrency cap; remove '
                      "concurrency and max_concurrency.")  # fmt: skip
        if top is not None and top <= 0:
            raise bad("max_rate", "max_rate must be requests per second > 0, e.g. 64.0.")
        listed = [r for r in rates if r is not None]
        low = float(min(listed)) if listed else 1.0
        high = float(top) if top is not None else float(max(listed)) if len(listed) > 1 else 256.0
        requests = None
        duration = float(merged["duration_s"] or 30.0)
    if low > high:
        key = f"max_{over}"
        raise bad(key, f"the lowest load {low:g} is above the top {high:g}; raise {key}.")
    return SearchPlan(
        over=over,
        low=low,
        high=high,
        max_probes=int(merged["max_probes"]),
        precision=precision,
        requests=requests,
        duration_s=duration,
        retry_below_crash=bool(merged["retry_below_crash"]),
        warmup=merged["warmup"] if "warmup" in base.model_fields_set else None,
    )


def _share(value: float | str) -> float | None:
    """``0.05`` or ``"5%"`` as a share; None when it is neither in (0, 1)."""
    if isinstance(value, str):
        text = value.strip()
        if not text.endswith("%"):
            return None
        try:
            share = float(text[:-1]) / 100.0
        except ValueError:
            return None
    else:
        share = float(value)
    return share if 0.0 < share < 1.0 else None


def _tokenizer(value: str | None, base_dir: Path) -> str | None:
    """``[bench] tokenizer``: ``server``, or a path relative to the campaign file."""
    if value is None or value == "server":
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base_dir / path)


def _percentiles(values: list[float], where: str, variant: str) -> tuple[float, ...]:
    """``[bench] percentiles``: numbers between 0 and 100, as ``bench --percentiles``."""
    if not all(0 < p < 100 for p in values):
        raise ConfigError(
            f"{where}: variant {variant!r}: bench percentiles must be numbers between 0 and "
            "100, e.g. percentiles = [95, 99.9].",
            path=where,
            key="bench.percentiles",
        )
    return tuple(values)


def _load_label(concurrency: int | None, rate: float | None, *, capped: bool) -> str:
    """The name of a load point in the store and reports: ``c=16``, ``rate=8`` or
    ``rate=8,c=64`` (when several concurrency caps are combined with each rate)."""
    if rate is None:
        return f"c={concurrency}"
    return f"rate={rate:g},c={concurrency}" if capped else f"rate={rate:g}"


# --- placeholders and splitting ----------------------------------------------------------


def _fields(template: str, where: str, label: str) -> list[str]:
    """The placeholder names in ``template``; ``{{`` and ``}}`` are literal braces."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(
            f"{where}: {label}: {exc} in {template!r}; write a literal brace as {{{{ or }}}}.",
            path=where,
            key=label,
        ) from None
    return [field for _, field, _, _ in parsed if field is not None]


def _fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` replaced by ``values[name]`` (no format specs)."""
    out = []
    for literal, field, _, _ in string.Formatter().parse(template):
        out.append(literal)
        if field is not None:
            out.append(values[field])
    return "".join(out)


def _check_placeholders(template: str, values: Mapping[str, str], where: str, label: str) -> None:
    for field in _fields(template, where, label):
        if field == "port" or field in values:
            continue
        if field == "model":
            fix = 'set [server] model = "/path/to/model"'
        else:
            fix = f"define it under [vars] ({field} = ...)"
        defined = sorted({*values, "port"})
        raise ConfigError(
            f"{where}: {label} uses {{{field}}}, which is not defined; {fix}, "
            f"or use one of {', '.join('{' + d + '}' for d in defined)}.",
            path=where,
            key=label,
        )


def _split(value: str, where: str, label: str) -> list[str]:
    """Split like a shell would, without ever running one."""
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise ConfigError(
            f"{where}: {label}: cannot split {value!r} into arguments ({exc}); close the quote.",
            path=where,
            key=label,
        ) from None


def _scalar(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _group_key(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """A short stable key for a command and environment: variants with it share a server."""
    blob = json.dumps({"argv": list(argv), "env": dict(sorted(env.items()))})
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _check_engine(engine: str, where: str, text: str) -> str:
    if engine not in ENGINE_NAMES:
        raise ConfigError(
            f"{where}{key_line(text, 'server', 'engine')}: [server] engine = {engine!r} has no "
            f"profile; use one of {', '.join(ENGINE_NAMES)} (generic for any other server).",
            path=where,
            key="server.engine",
        )
    return engine


def _default_port(engine: str) -> int | None:
    """The engine's usual port; None (pick a free one per start) when it has none."""
    port = get_profile(engine).default_port
    return None if port is None else int(port)
