"""`mcpipechekr verify`: run a finding's case against a server and record the result as evidence.

The case runs through the functional layer of `check` (`check/functional.py`),
so its expectations mean exactly what they mean in `mcpipechekr check`. It is
repeated (`probes.py`) until it fails or has passed every attempt: one failing
attempt makes the run red, only a clean sweep is green.

What is recorded, and when nothing is:

- the credit binding (`credit.py`) is computed before the server starts and
  again before recording; if it changed in between (the server's files were
  edited during the run) the result cannot be attributed and nothing is
  recorded;
- a server that cannot be started or reached is a transport failure: nothing
  is recorded, the command fails with exit 2 (a server that starts and then
  crashes or hangs on the case is a red result: that is the server failing);
- a case that cannot run (its tool is not listed, or may not be called) records
  nothing either;
- otherwise the result goes to `lifecycle.states.record_verification`, which moves
  the finding (see `lifecycle/states.py`), under a run id that is new for every run
  unless the caller passes one (a replay of a recorded id changes nothing), and
  with the run's origin: `cli` for a person's `mcpipechekr verify`, `loop` for
  the loop's reruns, `serve` for `verify_fix` of `mcpipechekr serve`, whose
  runs are recorded as advisory and move nothing.

`verify_case_file` is what `serve` runs: the finding's case file from the
home's cases folder (`case_files.py`, read without following a link; no
caller names a path), against the server the caller passes, which `serve`
takes from the project's config.yaml. Its errors quote only that file.

Only a reason token (`error-returned`, `timeout`, …) is stored; the failure
details are shown to whoever ran the command, with configured secrets redacted.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.artifacts.check_report import CheckResult
from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.check.cases import CasesFile
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.functional import run_functional
from mcpipechekr.config import CheckConfig, Config, ServerConfig
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import (
    CLOSING_STREAK,
    Transition,
    VerificationOrigin,
    record_verification,
)
from mcpipechekr.findings.lifecycle.trust import owners
from mcpipechekr.findings.server_identity import ServerKey, server_key
from mcpipechekr.findings.verification.acceptance import accept_command
from mcpipechekr.findings.verification.case_files import case_file, read_case_file, require_finding_id
from mcpipechekr.findings.verification.case_manifest import (
    LoadedManifest,
    case_asserts_result,
    load_manifest,
    placeholder_problems,
    probe_label,
)
from mcpipechekr.findings.verification.credit import CreditBinding, case_sha, changed_files, credit_binding
from mcpipechekr.findings.verification.generate import (
    FALSE_SUCCESS_RULE,
    case_id_for,
    find_finding,
    require_probe,
)
from mcpipechekr.findings.verification.probes import attempts_for, detection_chance, probe_kind
from mcpipechekr.server.lifecycle import ServerUnderTest
from mcpipechekr.server.logs import log_path_in

DEFAULT_TIMEOUT_S = CheckConfig().call_timeout_s


class TransportFailure(UserError):
    """The server could not be started or reached: no evidence either way, so nothing is recorded."""


@dataclass
class VerifyResult:
    """One verification run: what ran, what it showed, and what was recorded."""

    finding: Finding
    passed: bool
    attempts: int
    planned: int
    reason: str | None = None
    failures: list[str] = field(default_factory=list)
    transition: Transition | None = None
    not_recorded: str | None = None
    """Why nothing was recorded, when nothing was (the binding changed during the run)."""
    detection: float | None = None
    accept: str | None = None
    """The command that accepts the case, shown when the run did not count for want of it."""
    owner: ServerKey | None = None
    """The finding's server, shown when the run reached another one."""

    def lines(self) -> list[str]:
        """The command's report: the verdict, the move, and for a red the reason and the fix hint."""
        verdict = "green" if self.passed else "red"
        ran = (
            f"{self.attempts} of {self.planned} attempt(s) passed"
            if self.passed
            else f"attempt {self.attempts} of {self.planned} failed"
        )
        head = f"{self.finding.id}: {verdict} ({ran})"
        transition = self.transition
        if transition is None:
            head += f"; not recorded: {self.not_recorded}"
        elif transition.advisory:
            head += (
                f"; advisory, not credited: still {transition.to_state}, streak "
                f"{transition.streak}/{CLOSING_STREAK} (only `mcpipechekr verify` and the loop's runs "
                "move a finding)"
            )
        elif transition.not_counted == "case-not-accepted":
            head += (
                f"; not counted: no person accepted this case yet, so {self.finding.id} stays "
                f"{transition.to_state}. Read it and accept it: {self.accept}"
            )
        elif transition.not_counted == "other-server":
            owner = self.owner.describe() if self.owner else "another server"
            head += f"; not counted: {self.finding.id} belongs to server {owner}, not this one"
        elif transition.replayed:
            head += f"; run {transition.run_id} was already recorded, nothing changed ({transition.to_state})"
        else:
            head += f"; {transition.from_state} -> {transition.to_state}"
            if self.passed:
                head += f", streak {transition.streak}/{CLOSING_STREAK}"
                if transition.fresh_streak:
                    head += " (new credit binding: the streak started again)"
            if transition.regression:
                head += " REGRESSION: the finding was closed"
        if not self.passed:
            head += f" reason={self.reason}"
        out = [head]
        if not self.passed:
            out.append(f"  hint: {self.finding.hint}")
            out.extend(f"  {failure}" for failure in self.failures)
        elif self.detection is not None and self.detection < 0.95:
            out.append(
                f"  note: {self.planned} attempts see a failure of rate {self.finding.rate:.3g} with "
                f"probability {self.detection:.0%} only (capped); more runs add confidence"
            )
        return out


def verify_finding(
    home: Home,
    finding: str | Finding,
    case_id: str,
    manifest: Path | LoadedManifest,
    server: ServerConfig,
    *,
    origin: VerificationOrigin,
    timeout_s: float | None = None,
    attempts: int | None = None,
    run_id: str | None = None,
    redactor: Redactor | None = None,
    key: ServerKey | None = None,
    owned: Mapping[str, ServerKey] | None = None,
) -> VerifyResult:
    """Run the case and record the result; see the module docstring for when nothing is recorded.

    `finding` is its id, or the finding itself when the caller has it loaded;
    `manifest` the manifest's path, or the manifest already loaded. `origin`
    says who started the run (`lifecycle/states.py`). `redactor` scrubs the
    failure details shown (default: the server's own secrets). `key` is `server_key(server)` when the
    caller has it already (finding the source may ask git or an interpreter). `owned` is
    `trust.owners(home)` when the caller read it already: a pass over many findings reads it once,
    not once per finding. Raises
    UserError for bad input (unknown finding, manifest problems, a case that
    cannot run) and TransportFailure when the server cannot be reached.
    """
    if isinstance(finding, str):
        finding = find_finding(home, finding)
    tool = require_probe(finding)
    loaded = manifest if isinstance(manifest, LoadedManifest) else load_manifest(manifest)
    manifest_path = loaded.doc.path
    spec = loaded.manifest
    if spec.finding != finding.id:
        raise loaded.problem(("finding",), f"the manifest verifies {spec.finding}, not {finding.id}")
    case = spec.case(case_id)
    if case is None:
        raise UserError(
            f"{manifest_path}: no case '{case_id}' (cases: {', '.join(c.id for c in spec.cases)})"
        )
    problems = placeholder_problems(loaded, case)
    if problems:
        raise ConfigFileError(problems)
    if finding.defect_class == "false_success" and not case_asserts_result(case, tool):
        raise loaded.problem(("cases", loaded.case_index(case), "expect"), FALSE_SUCCESS_RULE)

    timeout = case.timeout_s or timeout_s or DEFAULT_TIMEOUT_S
    planned = attempts or attempts_for(finding.rate, probe_kind(finding.defect_class))

    def bind() -> CreditBinding:
        return credit_binding(case, manifest_version=spec.version, timeout_s=timeout, server=server)

    key = key or server_key(server)
    owner = (owners(home) if owned is None else owned).get(finding.id)
    if owner is not None and owner.source != key.source and origin != "serve":
        raise UserError(
            f"{finding.id} belongs to server {owner.describe()}; this server is {key.describe()}: a run of "
            "it is no evidence about that one. Run `mcpipechekr verify` in that server's project folder "
            "without a server, or give that server after `--`"
        )
    before = bind()
    config = Config(server=server)
    scrub = redactor or config.redactor
    log = log_path_in(home.logs, server.name)
    passed, done, result, told_name = _run_attempts(
        config, spec.as_cases_file(case), planned, timeout, log, scrub
    )
    outcome = VerifyResult(
        finding=finding,
        passed=passed,
        attempts=done,
        planned=planned,
        detection=detection_chance(finding.rate, planned),
        accept=accept_command(finding.id, case.id, manifest_path),
        owner=owner,
    )
    if not passed:
        outcome.reason = reason_token(result)
        outcome.failures = [scrub.redact(text) for text in result.details.get("failures", [])]
    after = bind()
    if after.fingerprint != before.fingerprint:
        changed = changed_files(before, after)
        outcome.not_recorded = (
            f"the server's files changed during the run ({', '.join(changed) or 'its target'}); "
            "the result cannot be credited to either version"
        )
        return outcome
    outcome.transition = record_verification(
        home,
        finding.id,
        run_id=run_id or str(uuid.uuid4()),
        passed=passed,
        binding=before.fingerprint,
        binding_json=scrub.redact(before.model_dump(mode="json")),
        probe=probe_label(manifest_path, case.id),
        origin=origin,
        server=key,
        server_names=frozenset({told_name} if told_name else ()),
        case_sha=case_sha(case),
        attempts=done,
        reason=outcome.reason,
    )
    return outcome


def verify_case_file(
    home: Home,
    finding_id: str,
    server: ServerConfig,
    *,
    origin: VerificationOrigin,
    case_id: str | None = None,
    redactor: Redactor | None = None,
) -> VerifyResult:
    """Run a case of the finding's case file in the home's cases folder against `server` and record it.

    `case_id` defaults to the generated case's (the finding id). The file is
    read without following a link (`case_files.py`); UserError when the id is
    not a finding id, the finding is unknown or it has no case file yet.
    """
    finding = find_finding(home, require_finding_id(finding_id))
    path = case_file(home, finding.id)
    text = read_case_file(home, finding.id)
    if text is None:
        raise UserError(f"no case for {finding.id} yet: generate_case writes it")
    loaded = load_manifest(path, text=text)
    return verify_finding(
        home,
        finding,
        case_id if case_id is not None else case_id_for(finding),
        loaded,
        server,
        origin=origin,
        redactor=redactor,
    )


def _run_attempts(
    config: Config, cases: CasesFile, planned: int, timeout_s: float, log_path: Path, redactor: Redactor
) -> tuple[bool, int, CheckResult, str | None]:
    """Run the case up to `planned` times on one server, its stderr redacted into `log_path`; stop at
    the first failure. The last item is the name the server gave itself at initialize."""
    try:
        live = ServerUnderTest(config.server, log_path, redactor)
        health = live.start()
    except ServerHalt as halt:
        raise TransportFailure(f"no evidence recorded: the server could not be reached.\n{halt}") from None
    try:
        ctx = CheckContext(config=config, server=live, call_timeout_s=timeout_s)
        try:
            ctx.tools = live.list_tools(timeout_s=timeout_s)
        except ServerHalt as halt:
            raise TransportFailure(f"no evidence recorded: tools/list failed.\n{halt}") from None
        told = health.server_info.get("name")
        told_name = told if isinstance(told, str) and told else None
        result: CheckResult | None = None
        for attempt in range(1, planned + 1):
            run_functional(ctx, cases)
            result = ctx.results[-1]
            if result.status == "SKIP":
                raise UserError(f"no evidence recorded: the case was not run: {result.reason}")
            if result.status == "FAIL":
                if not result.details.get("steps"):
                    raise UserError(f"no evidence recorded: the case could not run: {result.reason}")
                return False, attempt, result, told_name
        assert result is not None
        return True, planned, result, told_name
    finally:
        live.stop()


def reason_token(result: CheckResult) -> str:
    """The stored reason of a red result, from the functional layer's step log (never its text)."""
    steps = result.details.get("steps", [])
    failures = [str(text) for text in result.details.get("failures", [])]
    for step in steps:
        if step.get("outcome") == "server halted":
            return "timeout" if any("did not answer within" in text for text in failures) else "server-halted"
        if step.get("outcome") == "invalid":
            return "invalid-result"
    main = [text for text in failures if not text.startswith("cleanup ")]
    if not main and failures:
        return "cleanup-failed"
    for text in main:
        body = text.split("': ", 1)[1] if text.startswith("step '") else text
        if body.startswith("outcome: expected ok"):
            return "error-returned"
        if body.startswith("outcome: expected error"):
            return "unexpected-success"
        if body.startswith("error_code:"):
            return "wrong-error-code"
    return "expectation-failed"
