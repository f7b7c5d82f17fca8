"""The fix agent's process group: named in fix.json while it runs, ended with everything it started.

Each agent run is the leader of a new session and process group
(`runners.cliagent.run_cli`), so the agent, the shell commands it runs and
the servers those start can be signalled together. The loop ends that group
on a timeout, on Ctrl-C and on SIGTERM (handled as Ctrl-C). What it cannot
do is end it when the loop itself is SIGKILLed: the group then runs on,
orphaned, still editing the server's repository. So the group is recorded
in fix.json (`AgentProcess`: its id and its leader's start time) from the
moment it starts, and the next fix loop on the run ends a group it finds
there before it restores the work tree.

Why not a parent-death signal (Linux's `prctl(PR_SET_PDEATHSIG)`): it is
delivered when the *thread* that started the child exits, not the process
(a fix loop driven from a worker thread would kill its agent at once); it
reaches the agent only, not the grandchildren that edit files in its name;
and asyncio's subprocess API (which `run_cli` uses) takes no `preexec_fn` to
set it. The recorded group has none of these limits; its own limit is that
the agent runs on until the next fix loop on that run, or the next reboot.

A recorded group is ended only while it is provably the same one
(`_util/process_group.py`: the leader's start mark must match).
"""

from __future__ import annotations

from mcpipechekr._util.process_group import end_group, same_group, start_mark
from mcpipechekr.artifacts.fix_record import AgentProcess


def record_group(pid: int) -> AgentProcess:
    """The group a freshly started agent leads (`start_new_session`), as fix.json records it."""
    return AgentProcess(pgid=pid, started=start_mark(pid) or "")


def is_ours(process: AgentProcess) -> bool:
    """Whether the recorded group is still the agent's, and running."""
    return same_group(process.pgid, process.started)


def end_leftover(process: AgentProcess) -> bool:
    """End a recorded agent group left by a killed fix loop; True when one was still running."""
    if not is_ours(process):
        return False
    return end_group(process.pgid)
