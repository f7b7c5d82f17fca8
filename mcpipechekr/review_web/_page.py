"""The review page and its trace view: markup built on the server, every value escaped where it is put.

Bug ids, triggers, tools, the narrative and the traces come from the server
under test and from models (hostile input, docs/security.md), so the page is
built with the HTML report's helpers (`esc`, `attrs`, `tag`, `text`) and its
trace renderer; nothing is handed to the script to parse. The script has one
job: send the ticked bug ids, the annotation and the button pressed to `POST
/api/decision` with the page's token, and show the answer as text
(`textContent`, never markup). It runs under a Content-Security-Policy that
allows no script but itself (by hash), fetches only from the page's own origin
and allows no form, frame or base URL.
"""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import quote

from mcpipechekr import __version__
from mcpipechekr.kpi import LABELS, format_value, read_kpis, status_text, target_text, trend_text
from mcpipechekr.report import CONTENT_SECURITY_POLICY as REPORT_POLICY
from mcpipechekr.report import CSS as REPORT_CSS
from mcpipechekr.report import SCRIPT as REPORT_SCRIPT
from mcpipechekr.report import TraceData, esc, render_trace, tag, text
from mcpipechekr.review_web._api import MAX_ANNOTATION_CHARS, BugView, ProgressView, RunView
from mcpipechekr.review_web._session import ReviewSession

CSS = (
    REPORT_CSS
    + """
.decide { border-top: 1px solid var(--line); padding: 4px 0 10px; margin-top: 16px; }
table.bugs td:first-child { min-width: 0; word-break: normal; }
table.bugs td:nth-child(3) { min-width: 260px; overflow-wrap: anywhere; }
textarea#annotation { width: 100%; min-height: 64px; font: inherit; }
.buttons { margin-top: 8px; display: flex; gap: 10px; align-items: center; }
button { font: inherit; padding: 6px 14px; border-radius: 6px; border: 1px solid var(--line);
  cursor: pointer; }
button#approve { background: #067647; color: #fff; border-color: #067647; }
button:disabled { opacity: .5; cursor: default; }
#status.error { color: #b42318; } #status.done { color: #067647; font-weight: 600; }
tr.evidence-only { color: var(--muted); }
td.pick { text-align: center; }
.why-not { font-style: italic; }
pre.narrative { max-height: none; }
"""
)

SCRIPT = """
(function () {
  var token = new URLSearchParams(location.search).get('token') || '';
  var status = document.getElementById('status');
  var approve = document.getElementById('approve');
  var leave = document.getElementById('exit');
  var note = document.getElementById('annotation');
  var boxes = document.querySelectorAll('input.pick');
  function ticked() {
    var ids = [];
    for (var i = 0; i < boxes.length; i++) if (boxes[i].checked) ids.push(boxes[i].value);
    return ids;
  }
  function say(message, kind) { status.textContent = message; status.className = kind; }
  function count() {
    if (!approve.hasAttribute('data-off')) approve.disabled = ticked().length === 0;
    approve.textContent = 'Approve selected (' + ticked().length + ')';
  }
  function lock(locked) {
    leave.disabled = locked; note.disabled = locked;
    for (var i = 0; i < boxes.length; i++) boxes[i].disabled = locked;
    if (locked) approve.disabled = true; else count();
  }
  function send(decision) {
    var body = {decision: decision, bugs: decision === 'approve' ? ticked() : [], annotation: note.value};
    lock(true);
    say('Recording…', 'busy');
    fetch('/api/decision', {
      method: 'POST', cache: 'no-store', credentials: 'omit',
      headers: {'Content-Type': 'application/json', 'X-Review-Token': token},
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().then(function (data) { return {ok: response.ok, data: data}; });
    }).then(function (answer) {
      if (answer.ok) {
        var looping = document.body.hasAttribute('data-loop');
        say(answer.data.message + (looping ? '. The loop goes on: this page follows its progress.'
          : '. The review server has stopped; you can close this page.'), 'done');
        document.body.setAttribute('data-decided', answer.data.decision);
        if (looping) setTimeout(function () { location.reload(); }, 2000);
      } else {
        say(answer.data.error, 'error');
        lock(false);
      }
    }).catch(function (error) {
      say('The review server did not answer (' + error + '); nothing may have been recorded.', 'error');
      lock(false);
    });
  }
  for (var i = 0; i < boxes.length; i++) boxes[i].addEventListener('change', count);
  approve.addEventListener('click', function () { send('approve'); });
  leave.addEventListener('click', function () { send('exit'); });
  count();
})();
"""


PROGRESS_SCRIPT = """
(function () {
  var token = new URLSearchParams(location.search).get('token') || '';
  function put(id, value) { document.getElementById(id).textContent = value; }
  function poll() {
    fetch('/api/progress', {cache: 'no-store', credentials: 'omit', headers: {'X-Review-Token': token}})
      .then(function (response) {
        if (!response.ok) throw new Error('status ' + response.status);
        return response.json();
      }).then(function (now) {
        if (now.review_pending || now.ended) { location.reload(); return; }
        put('phase', now.phase);
        put('run', (now.run_id || '-') + ' (iteration ' + now.iteration + ')');
        put('counts', now.total === null ? now.done + ' done'
          : now.done + '/' + now.total + ' done, ' + now.running + ' running, ' + now.failed + ' failed');
        put('detail', now.detail || '-');
        put('status', 'updated ' + new Date().toLocaleTimeString());
      }).catch(function (error) {
        put('status', 'the loop did not answer (' + error + '); it may have ended.');
      });
  }
  setInterval(poll, 2000);
  poll();
})();
"""
"""The progress view's one job: ask `/api/progress` every 2 s and show the answer as text; when a
review waits or the loop has ended, reload (the same address then serves the review, or the last run)."""


def _policy(script: str, *, fetches: bool) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        + ("connect-src 'self'; " if fetches else "")
        + f"script-src 'sha256-{digest}'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
    )


CONTENT_SECURITY_POLICY = _policy(SCRIPT, fetches=True)
"""The review page's policy: its own script by hash, requests to its own origin only (the API)."""

PROGRESS_POLICY = _policy(PROGRESS_SCRIPT, fetches=True)
"""The progress view's policy: its own script by hash, fetching `/api/progress` on its own origin."""

ENDED_POLICY = _policy("", fetches=False)
"""The ended loop's page: no script at all (nothing is left to poll or decide)."""

TRACE_POLICY = REPORT_POLICY + "; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
"""The trace view's: the HTML report's (nothing fetched, its step-revealing script by hash)."""


def render_page(session: ReviewSession, view: RunView, token: str, *, loop: bool = False) -> str:
    """The review page: the summary, the bugs in fix order with a box per selectable one, the decision.

    `loop`: served by the loop's page, which goes back to its progress view once the decision is made
    (the script reloads); alone, the server stops after the decision.
    """
    title = f"Review of {view.run_id}"
    body = (
        tag("header", tag("h1", esc(title)) + tag("p", esc(f"MCPipeChekr {__version__}"), class_="muted"))
        + summary_section(session, view)
        + since_fix_section(session)
        + kpi_section(session, view)
        + bugs_section(view, token)
        + decision_section(view)
        + narrative_section(session)
    )
    return _document(
        title, body, CSS, SCRIPT, CONTENT_SECURITY_POLICY, body_attrs=' data-loop="yes"' if loop else ""
    )


def render_ended_page(session: ReviewSession, view: RunView, token: str, reason: str) -> str:
    """The loop's page once the loop has ended by itself: why, and its last run as a review shows it
    (what the fixes changed, the KPIs, the bugs left, the narrative), with nothing left to decide."""
    title = f"The loop ended after {view.run_id}"
    read_only = view.model_copy(
        update={"selectable": [], "bugs": [bug.model_copy(update={"selectable": False}) for bug in view.bugs]}
    )
    body = (
        tag("header", tag("h1", esc(title)) + tag("p", esc(f"MCPipeChekr {__version__}"), class_="muted"))
        + tag("section", tag("p", tag("b", esc(f"The loop ended: {reason}."))), id="ended")
        + since_fix_section(session)
        + kpi_section(session, view)
        + bugs_section(read_only, token)
        + narrative_section(session)
    )
    return _document(title, body, CSS, "", ENDED_POLICY)


def since_fix_section(session: ReviewSession) -> str:
    """What the fixes before this run changed, task by task (`before_after`), as the terminal says it
    after the evaluation: the reviewer sees the fix measured where the next decision is made."""
    since = session.since_fix
    if since is None:
        return ""
    fixes = ", ".join(since.fixes) or "no fix"
    lead = f"{since.before_run} → {since.after_run}, after {fixes}:"
    if not since.changes:
        items = tag("p", esc(f"{lead} no task changed its calls, tokens or success."), class_="muted")
    else:
        same = f" ({since.unchanged} task(s) unchanged)" if since.unchanged else ""
        items = tag("p", esc(lead + same)) + tag(
            "ul", "".join(tag("li", esc(change.statement)) for change in since.changes)
        )
    return tag("section", tag("h2", "Since the fix") + items, id="since-fix")


def render_progress_page(view: ProgressView) -> str:
    """The loop's page while no review waits: phase, run, attempts and the fix agent's last line.

    Filled here (escaped), so it is right without the script too; the script refreshes it every 2 s and
    reloads when a review waits; it reads the token from the address, as the review page's does.
    """
    title = "MCPipeChekr loop: progress"
    counts = (
        f"{view.done} done"
        if view.total is None
        else f"{view.done}/{view.total} done, {view.running} running, {view.failed} failed"
    )
    rows = [
        ("phase", "phase", view.phase),
        ("run", "run", f"{view.run_id or '-'} (iteration {view.iteration})"),
        ("attempts", "counts", counts),
        ("last line", "detail", view.detail or "-"),
    ]
    table = tag(
        "table",
        tag(
            "tbody",
            "".join(
                tag("tr", tag("th", esc(name)) + tag("td", text(value), id=ident))
                for name, ident, value in rows
            ),
        ),
    )
    body = tag(
        "header", tag("h1", esc(title)) + tag("p", esc(f"MCPipeChekr {__version__}"), class_="muted")
    ) + tag(
        "section",
        tag("h2", "Progress")
        + table
        + tag("p", "The review appears here when the loop reaches it.", class_="muted")
        + tag("p", "", id="status", role="status", class_="muted"),
        id="progress",
    )
    return _document(title, body, CSS, PROGRESS_SCRIPT, PROGRESS_POLICY)


def summary_section(session: ReviewSession, view: RunView) -> str:
    """What the terminal review says first: the bug count, the highest gap, the agent bugs, the notes."""
    bugs, _ = session.shown()
    if not bugs:
        offers = (
            "Exit ends the session."
            if view.fixing_off
            else "Approve goes on with nothing to fix; exit stops."
        )
        lines = [f"{view.run_id}: no bugs found, so there is nothing to fix. {offers}"]
    else:
        top = max(bugs, key=lambda bug: bug.token_cost_of_gap)
        agent = sum(bug.fixable_by == "agent" for bug in bugs)
        lines = [
            f"{len(bugs)} bug(s); highest token_cost_of_gap {top.token_cost_of_gap:,} tokens ({top.id})."
            + (
                f" {agent} of them are agent behaviour: shown as evidence, not sent to the fix loop."
                if agent
                else ""
            )
        ]
    lines += [f"note: {note}" for note in session.report.notes]
    if view.fixing_off:
        lines.append(f"Fixing is off: {view.fixing_off}. Nothing can be approved here; exit ends the review.")
    body = "".join(tag("p", text(line)) for line in lines)
    if view.annotations:
        body += tag("p", "Annotations already recorded for this report:") + tag(
            "ul", "".join(tag("li", text(note)) for note in view.annotations)
        )
    return tag("section", tag("h2", "Summary") + body, id="summary")


def kpi_section(session: ReviewSession, view: RunView) -> str:
    """The run's key figures against their targets (kpi.json), as the terminal review shows them: the
    reviewer decides knowing which targets the run meets. Empty for a run without kpi.json, or with
    one of another report."""
    kpis = read_kpis(session.run_dir)
    if kpis is None or kpis.run_id != session.report.run_id:
        return ""
    rows = "".join(
        tag(
            "tr",
            tag("td", esc(LABELS[figure.name]))
            + tag("td", esc(format_value(figure.name, figure.value)))
            + tag("td", esc(target_text(figure)))
            + tag("td", esc(status_text(figure)), class_=f"kpi-{figure.status.replace(' ', '-')}")
            + tag("td", esc(trend_text(figure))),
        )
        for figure in kpis.kpis
    )
    head = "".join(tag("th", esc(name)) for name in ("figure", "value", "target", "", "trend"))
    verdict = "every KPI met" if kpis.all_met() else "not every KPI met yet"
    table = tag("table", tag("thead", tag("tr", head)) + tag("tbody", rows))
    title = f"KPIs (loop {kpis.loop})"
    return tag("section", tag("h2", esc(title)) + table + tag("p", esc(verdict), class_="muted"), id="kpis")


def bugs_section(view: RunView, token: str) -> str:
    """The bugs in fix order: a checkbox for each server bug, agent-behaviour ones shown as evidence."""
    if not view.bugs:
        return tag("section", tag("h2", "Bugs") + tag("p", "No bugs.", class_="muted"), id="bugs")
    head = "".join(
        tag("th", esc(name))
        for name in ("#", "fix", "id / trigger", "type", "severity", "tool", "gap tokens", "seen", "evidence")
    )
    rows = "".join(_bug_row(number, bug, token) for number, bug in enumerate(view.bugs, start=1))
    table = tag("table", tag("thead", tag("tr", head)) + tag("tbody", rows), class_="bugs")
    return tag("section", tag("h2", "Bugs, in fix order") + table, id="bugs")


def _bug_row(number: int, bug: BugView, token: str) -> str:
    if bug.selectable:
        pick = (
            f'<input type="checkbox" class="pick" value="{esc(bug.id)}" id="pick-{number}"'
            f' aria-label="{esc("approve " + bug.id)}">'
        )
    else:
        pick = tag("span", "—", title=bug.why_not)
    ident = (
        tag("label", tag("b", esc(bug.id)), for_=f"pick-{number}")
        if bug.selectable
        else tag("b", esc(bug.id))
    )
    ident += tag("div", text(bug.trigger), class_="muted")
    if bug.why_not:
        ident += tag("div", esc(bug.why_not), class_="why-not")
    links = "".join(_evidence_link(item.task_id, item.steps, item.url, token) for item in bug.evidence)
    cells = [
        tag("td", esc(number)),
        tag("td", pick, class_="pick"),
        tag("td", ident),
        tag("td", esc(bug.type)),
        tag("td", esc(bug.severity), class_="severity"),
        tag("td", tag("code", esc(bug.tool or "-"))),
        tag("td", esc(f"{bug.token_cost_of_gap:,}")),
        tag("td", esc(bug.occurrences)),
        tag("td", links or tag("span", "-", class_="muted")),
    ]
    return tag(
        "tr",
        "".join(cells),
        class_=f"bug severity-{bug.severity}" + ("" if bug.selectable else " evidence-only"),
        data_bug=bug.id,
        data_selectable="yes" if bug.selectable else "no",
    )


def _evidence_link(task_id: str, steps: list[int], url: str | None, token: str) -> str:
    label = f"{task_id} step {steps[0]}" if steps else task_id
    if url is None:
        return tag("span", esc(label + " (trace missing)"), class_="muted")
    path, _, anchor = url.partition("#")
    href = f"{path}?token={quote(token, safe='')}" + (f"#{anchor}" if anchor else "")
    return tag("a", esc(label), href=href, class_="evidence", target="_blank", rel="noopener noreferrer")


def narrative_section(session: ReviewSession) -> str:
    """The Phase 2 narrative, as written (markdown shown as text, escaped)."""
    try:
        narrative = session.run_dir.phase2_narrative.read_text(encoding="utf-8")
    except OSError:
        body = tag("p", esc(f"({session.run_dir.phase2_narrative.name} is missing.)"), class_="muted")
    else:
        body = tag("pre", text(narrative), class_="narrative")
    return tag("section", tag("h2", "Narrative") + body, id="narrative")


def decision_section(view: RunView) -> str:
    """The annotation box and the two buttons; approve is disabled (saying why) while fixing is off."""
    off = view.fixing_off
    approve_attrs: dict[str, object] = {"id": "approve", "type": "button", "disabled": True}
    if off:
        approve_attrs |= {"data_off": "yes", "title": f"fixing is off: {off}"}
    return tag(
        "section",
        tag("h2", "Decision")
        + tag(
            "label", "Annotation for the fix agent (optional, recorded with the decision):", for_="annotation"
        )
        + tag("textarea", "", id="annotation", maxlength=MAX_ANNOTATION_CHARS)
        + tag(
            "div",
            tag("button", "Approve selected (0)", **approve_attrs)
            + tag("button", "Exit (fix nothing)", id="exit", type="button")
            + tag("span", "", id="status", role="status"),
            class_="buttons",
        ),
        class_="decide",
        id="decision",
    )


def render_trace_page(session: ReviewSession, data: TraceData, token: str) -> str:
    """One trace, open, its wasted steps marked; the report's script reveals the address's `#step-…`."""
    title = f"{session.run_dir.run_id}: {data.relative}"
    back = tag("a", "← back to the review", href=f"/?token={quote(token, safe='')}")
    body = tag("header", tag("h1", esc(title)) + tag("p", back)) + render_trace(session.run, data)
    return _document(title, body, REPORT_CSS, REPORT_SCRIPT, TRACE_POLICY)


def _document(title: str, body: str, css: str, script: str, policy: str, *, body_attrs: str = "") -> str:
    """The page, its policy also in a <meta> (the header carries it too) for a copy saved to disk; without
    `frame-ancestors`, which browsers ignore in a <meta> and complain about on the console."""
    in_meta = "; ".join(part for part in policy.split("; ") if not part.startswith("frame-ancestors"))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(in_meta)}">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{esc(title)}</title><style>{css}</style></head>\n"
        f"<body{body_attrs}>{body}<script>{script}</script></body></html>\n"
    )
