"""The steps of a run, each one library function that both front ends call.

`mcpipechekr <command>` (cli/) and the doit graph (graph/) add nothing but
argument parsing and printing: a step does the work of its artifact and every
side effect the artifact means — the manifest's status (`stage.run_stage`),
the findings hand-offs (`handoff`: call evidence after each Phase 1 attempt,
bugs registered and verified after an evaluation, fixes claimed after a
commit) — returns its result, and writes its messages to the console it is
given (stdout for doit and for text output; stderr where a command keeps
stdout for JSON).

One module per step: `stage` (the planned run folder, its manifest, the
status of each step), `snapshot`, `check`, `lint`, `trace`, `evaluate`,
`review`, `fix`, `baseline`, `summary`, `report` (the HTML report), `session` (what the loop checks and
reads between its builds), and `handoff`. Nothing is re-exported here:
importing one step must not import every phase behind the others.
"""
